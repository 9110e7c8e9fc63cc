package hook

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

var captureNow = time.Date(2026, 12, 7, 1, 0, 0, 0, time.UTC)

// toolInput builds a tool hook's input as Claude Code sends it.
func toolInput(t *testing.T, event, tool string, input, response any, errText string) ToolInput {
	t.Helper()
	m := map[string]any{
		"session_id": "s1", "cwd": "/repo/sub", "hook_event_name": event,
		"tool_name": tool, "tool_input": input, "tool_use_id": "toolu_" + tool + event,
	}
	if response != nil {
		m["tool_response"] = response
	}
	if errText != "" {
		m["error"] = errText
	}
	b, _ := json.Marshal(m)
	in, err := ParseToolInput(b)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

var testRepo = Repo{Root: "/repo"}

// TestBuildEvent holds the capture rules of docs/capture.md for one tool
// call each.
func TestBuildEvent(t *testing.T) {
	t.Parallel()
	sc := Scope{Namespace: "local/repo"}
	t.Run("Edit", func(t *testing.T) {
		in := toolInput(t, "PostToolUse", "Edit", map[string]any{"file_path": "/repo/sub/x.go", "old_string": "a", "new_string": "b"}, map[string]any{}, "")
		ev, _ := BuildEvent(ClaudeCode, in, false, testRepo, nil, sc, captureNow)
		if ev == nil || ev.Kind != KindEdit || ev.Path != "sub/x.go" || ev.Created || ev.Namespace != "local/repo" || ev.ID == "" {
			t.Fatalf("event = %+v", ev)
		}
		again, _ := BuildEvent(ClaudeCode, in, false, testRepo, nil, sc, captureNow.Add(time.Second))
		if again.ID != ev.ID {
			t.Errorf("the same tool call got ids %s and %s", ev.ID, again.ID)
		}
	})
	t.Run("WriteCreates", func(t *testing.T) {
		in := toolInput(t, "PostToolUse", "Write", map[string]any{"file_path": "new.go", "content": "package x"}, map[string]any{"type": "create"}, "")
		ev, _ := BuildEvent(ClaudeCode, in, false, testRepo, nil, sc, captureNow)
		if ev == nil || ev.Path != "sub/new.go" || !ev.Created {
			t.Fatalf("event = %+v", ev)
		}
	})
	t.Run("CodexPatch", func(t *testing.T) {
		in := toolInput(t, "PostToolUse", "apply_patch", map[string]any{"command": "*** Begin Patch\n*** Add File: a/b.txt\n+hi\n*** End Patch"}, "Success", "")
		ev, _ := BuildEvent(Codex, in, false, testRepo, nil, sc, captureNow)
		if ev == nil || ev.Path != "sub/a/b.txt" || !ev.Created || !strings.HasPrefix(ev.ID, "cx-") {
			t.Fatalf("event = %+v", ev)
		}
	})
	t.Run("OutsideRepo", func(t *testing.T) {
		in := toolInput(t, "PostToolUse", "Edit", map[string]any{"file_path": "/etc/hosts"}, map[string]any{}, "")
		if ev, _ := BuildEvent(ClaudeCode, in, false, testRepo, nil, sc, captureNow); ev != nil {
			t.Fatalf("event = %+v, want none for a path outside the repository", ev)
		}
	})
	t.Run("CommandFails", func(t *testing.T) {
		out := "=== RUN TestA\n--- FAIL: TestA (0.00s)\n    a_test.go:9: got 1\n--- FAIL: TestB (0.00s)\nFAIL\nFAIL\tx\t0.01s"
		in := toolInput(t, "PostToolUseFailure", "Bash", map[string]any{"command": "go  test ./..."}, nil, "Exit code 1\n"+out)
		ev, _ := BuildEvent(ClaudeCode, in, true, testRepo, nil, sc, captureNow)
		if ev == nil || ev.Kind != KindCommand || ev.Command != "go test ./..." || ev.OK || ev.ExitCode != 1 {
			t.Fatalf("event = %+v", ev)
		}
		if !slices.Equal(ev.Tests, []string{"TestA", "TestB"}) {
			t.Errorf("tests = %q", ev.Tests)
		}
		if len(ev.Errors) == 0 || ev.Errors[0] != "--- FAIL: TestA (0.00s)" {
			t.Errorf("errors = %q", ev.Errors)
		}
	})
	t.Run("TerminalEscapes", func(t *testing.T) {
		out := "\x1b[31m--- FAIL: TestColour (0.00s)\x1b[0m\n\x1b[1merror:\x1b[0m bad\u202e byte\x00"
		in := toolInput(t, "PostToolUseFailure", "Bash", map[string]any{"command": "make\x07 test"}, nil, "Exit code 2\n"+out)
		ev, _ := BuildEvent(ClaudeCode, in, true, testRepo, nil, sc, captureNow)
		if ev == nil || ev.Command != "make test" || !slices.Equal(ev.Tests, []string{"TestColour"}) ||
			!slices.Equal(ev.Errors, []string{"--- FAIL: TestColour (0.00s)", "error: bad byte"}) {
			t.Fatalf("event = %+v", ev)
		}
	})
	t.Run("CommandPasses", func(t *testing.T) {
		in := toolInput(t, "PostToolUse", "Bash", map[string]any{"command": "make build"}, map[string]any{"stdout": "ok", "stderr": "", "interrupted": false}, "")
		ev, _ := BuildEvent(ClaudeCode, in, false, testRepo, nil, sc, captureNow)
		if ev == nil || !ev.OK || ev.ExitCode != -1 || ev.Errors != nil {
			t.Fatalf("event = %+v", ev)
		}
	})
	t.Run("CodexOutputOnly", func(t *testing.T) {
		// Codex 0.169 sends the output alone, without an exit code.
		for out, ok := range map[string]bool{
			"--- FAIL: TestCheck\n": false, "ok  \tx\t0.1s\n": true, "": true, "main.go:3: error: x\nerror: build failed": false,
			"make: *** [all] Error 2": false, "panic: boom": false, "all good, no errors found": true,
		} {
			in := toolInput(t, "PostToolUse", "Bash", map[string]any{"command": "sh check.sh"}, out, "")
			ev, _ := BuildEvent(Codex, in, false, testRepo, nil, sc, captureNow)
			if ev == nil || ev.OK != ok || ev.ExitCode != -1 {
				t.Errorf("output %q: event = %+v, want ok %v", out, ev, ok)
			}
		}
	})
	t.Run("CodexExitCode", func(t *testing.T) {
		in := toolInput(t, "PostToolUse", "Bash", map[string]any{"command": []string{"bash", "-lc", "npm test"}}, "Exit code: 2\nWall time: 1s\nOutput:\nError: boom", "")
		ev, _ := BuildEvent(Codex, in, false, testRepo, nil, sc, captureNow)
		if ev == nil || ev.Command != "npm test" || ev.OK || ev.ExitCode != 2 || !slices.Equal(ev.Errors, []string{"Error: boom"}) {
			t.Fatalf("event = %+v", ev)
		}
	})
	t.Run("ReadOnly", func(t *testing.T) {
		for _, c := range []string{"ls -la", "cat .env", "git status && git diff", "grep -r x . | head", "sed -n 1,5p f"} {
			in := toolInput(t, "PostToolUse", "Bash", map[string]any{"command": c}, map[string]any{"stdout": "x"}, "")
			if ev, _ := BuildEvent(ClaudeCode, in, false, testRepo, nil, sc, captureNow); ev != nil {
				t.Errorf("%q captured: %+v", c, ev)
			}
		}
		in := toolInput(t, "PostToolUse", "Bash", map[string]any{"command": "sed -i s/a/b/ f"}, map[string]any{"stdout": ""}, "")
		if ev, _ := BuildEvent(ClaudeCode, in, false, testRepo, nil, sc, captureNow); ev == nil {
			t.Error("sed -i was not captured")
		}
	})
	t.Run("OtherTool", func(t *testing.T) {
		in := toolInput(t, "PostToolUse", "Read", map[string]any{"file_path": "/repo/x.go"}, map[string]any{}, "")
		if ev, _ := BuildEvent(ClaudeCode, in, false, testRepo, nil, sc, captureNow); ev != nil {
			t.Errorf("Read captured: %+v", ev)
		}
	})
}

// readSecrets reads the screen's corpus of secret shapes: every shape the
// screen knows, one a line (storage/screen/testdata/secrets.txt).
func readSecrets(t *testing.T) []string {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "..", "..", "storage", "screen", "testdata", "secrets.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		_, text, ok := strings.Cut(line, "\t")
		if !ok {
			t.Fatalf("secrets.txt: %q has no tab", line)
		}
		text = strings.NewReplacer(`\n`, "\n", `\t`, "\t", `\\`, `\`).Replace(text)
		out = append(out, text)
	}
	if len(out) < 100 {
		t.Fatalf("read %d secrets, want the whole corpus", len(out))
	}
	return out
}

// TestBuildEvent_ScreensOutput feeds every secret of the screen's corpus to
// a failing command's output (as `cat .env` inside a script would print
// it), to a passing one's stdout and to the command line itself: no event
// holds it, and each one left out is counted.
func TestBuildEvent_ScreensOutput(t *testing.T) {
	t.Parallel()
	sc := Scope{Namespace: "local/repo"}
	for i, secret := range readSecrets(t) {
		out := "loading config\n" + secret + "\nError: deploy failed"
		for _, c := range []struct {
			name   string
			failed bool
			in     ToolInput
		}{
			{"failure", true, toolInput(t, "PostToolUseFailure", "Bash", map[string]any{"command": "./deploy.sh"}, nil, "Exit code 1\n"+out)},
			{"stdout", false, toolInput(t, "PostToolUse", "Bash", map[string]any{"command": "./deploy.sh"}, map[string]any{"stdout": out, "stderr": ""}, "")},
			{"stderr", false, toolInput(t, "PostToolUse", "Bash", map[string]any{"command": "./deploy.sh"}, map[string]any{"stdout": "", "stderr": out, "exit_code": 1}, "")},
			{"command", false, toolInput(t, "PostToolUse", "Bash", map[string]any{"command": "./deploy.sh <<EOF\n" + secret + "\nEOF"}, map[string]any{"stdout": "ok"}, "")},
		} {
			ev, scr := BuildEvent(ClaudeCode, c.in, c.failed, testRepo, nil, sc, captureNow)
			b, _ := json.Marshal(ev)
			for _, part := range strings.Fields(secret) {
				if len(part) >= 12 && strings.Contains(string(b), part) {
					t.Fatalf("secret %d (%s): the event holds %q: %s", i, c.name, part, b)
				}
			}
			if scr.Fields == 0 {
				t.Errorf("secret %d (%s): nothing counted as screened", i, c.name)
			}
			if c.name != "command" && (ev == nil || ev.Command != "./deploy.sh") {
				t.Errorf("secret %d (%s): event = %+v, want the command kept without its output", i, c.name, ev)
			}
		}
	}
}

// TestStripPrivate removes <private> spans from commands and output before
// anything is spooled.
func TestStripPrivate(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"a <private>b</private> c":                  "a  c",
		"a <PRIVATE>b\nc</Private> d":               "a  d",
		"x <private>open to the end":                "x",
		"<private>1</private>k<private>2</private>": "k",
		"nothing here":                              "nothing here",
	} {
		if got := StripPrivate(in); got != want {
			t.Errorf("StripPrivate(%q) = %q, want %q", in, got, want)
		}
	}
	in := toolInput(t, "PostToolUseFailure", "Bash", map[string]any{"command": "make deploy <private>TARGET=vault-7</private>"}, nil,
		"Exit code 2\nerror: <private>host vault-7 refused</private> deploy failed")
	ev, _ := BuildEvent(ClaudeCode, in, true, testRepo, nil, Scope{Namespace: "n"}, captureNow)
	b, _ := json.Marshal(ev)
	if ev == nil || strings.Contains(string(b), "vault-7") || ev.Command != "make deploy" {
		t.Errorf("event = %s, want the private spans gone", b)
	}
}

// TestIgnore holds the exclusion file's rules (docs/capture.md).
func TestIgnore(t *testing.T) {
	t.Parallel()
	ig := ParseIgnore("# secrets\nsecrets/\n*.pem\n/config/prod.yaml\ndocs/**/draft-*.md\n!keep.pem\n\ncmd: terraform\ncmd: kubectl * secret*\n")
	for p, want := range map[string]bool{
		"secrets/a.txt": true, "x/secrets/b": true, "secrets": false, "key.pem": true, "a/b/key.pem": true,
		"config/prod.yaml": true, "x/config/prod.yaml": false, "docs/a/b/draft-1.md": true, "docs/draft-1.md": true,
		"docs/final.md": false, "keep.pem": true, "main.go": false,
	} {
		if got := ig.Path(p); got != want {
			t.Errorf("Path(%q) = %v, want %v", p, got, want)
		}
	}
	for c, want := range map[string]bool{
		"terraform apply": true, "terraform": true, "terraformer": false, "cd infra && terraform plan": true,
		"kubectl get secrets -n x": true, "kubectl get pods": false, "cat secrets/db.txt": true, "openssl x509 -in key.pem": true,
		"go test ./...": false, "make build": false,
	} {
		if got := ig.Command(c); got != want {
			t.Errorf("Command(%q) = %v, want %v", c, got, want)
		}
	}
	var none *Ignore
	if none.Path("x") || none.Command("x") {
		t.Error("a nil Ignore excludes something")
	}
	// Through BuildEvent: an excluded edit and command are not captured.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, IgnoreFile), []byte("vendor/\ncmd: ./release.sh\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	repo := Repo{Root: dir}
	loaded := LoadIgnore(dir)
	edit := toolInput(t, "PostToolUse", "Edit", map[string]any{"file_path": filepath.Join(dir, "vendor", "x.go")}, map[string]any{}, "")
	edit.Cwd = dir
	run := toolInput(t, "PostToolUse", "Bash", map[string]any{"command": "./release.sh v1"}, map[string]any{"stdout": "done"}, "")
	run.Cwd = dir
	for _, in := range []ToolInput{edit, run} {
		if ev, _ := BuildEvent(ClaudeCode, in, false, repo, loaded, Scope{Namespace: "n"}, captureNow); ev != nil {
			t.Errorf("excluded %s captured: %+v", in.ToolName, ev)
		}
	}
}

// TestFailedTests reads the failing tests of the common runners.
func TestFailedTests(t *testing.T) {
	t.Parallel()
	out := "--- FAIL: TestGo (0.1s)\nFAILED tests/test_x.py::test_y - AssertionError\ntest cache::evicts ... FAILED\n  ✕ adds numbers (3 ms)\n--- FAIL: TestGo (0.1s)\n"
	want := []string{"TestGo", "tests/test_x.py::test_y", "cache::evicts", "adds numbers"}
	if got := FailedTests(out); !slices.Equal(got, want) {
		t.Errorf("FailedTests = %q, want %q", got, want)
	}
}

// FuzzBuildEvent feeds arbitrary tool hook input through the capture: it
// never panics, and every event it makes is one of the kinds, with a
// repository-relative path and no <private> span.
func FuzzBuildEvent(f *testing.F) {
	f.Add([]byte(`{"session_id":"s","hook_event_name":"PostToolUse","tool_name":"Edit","tool_input":{"file_path":"/repo/a.go"}}`), false)
	f.Add([]byte(`{"session_id":"s","hook_event_name":"PostToolUseFailure","tool_name":"Bash","tool_input":{"command":"go test <private>x</private>"},"error":"Exit code 1\n--- FAIL: TestX"}`), true)
	f.Add([]byte(`{"session_id":"s","tool_name":"Bash","tool_input":{"command":["bash","-lc","make"]},"tool_response":"Exit code: 2\nerror: x"}`), false)
	f.Add([]byte(`{"session_id":"s","tool_name":"apply_patch","tool_input":{"command":"*** Update File: ../x"}}`), false)
	// OpenCode's shapes, as Hearth's plugin passes them.
	f.Add([]byte(`{"session_id":"s","tool_name":"bash","tool_input":{"command":"go test"},"tool_response":{"output":"--- FAIL: TestX","metadata":{"exit":1}}}`), false)
	f.Add([]byte(`{"session_id":"s","tool_name":"write","tool_input":{"filePath":"/repo/a.go"},"tool_response":{"metadata":{"exists":false}}}`), false)
	f.Add([]byte(`{"session_id":"s","tool_name":"apply_patch","tool_input":{"patchText":"*** Add File: /repo/b.go"}}`), false)
	f.Fuzz(func(t *testing.T, data []byte, failed bool) {
		in, err := ParseToolInput(data)
		if err != nil {
			return
		}
		ev, _ := BuildEvent(ClaudeCode, in, failed, testRepo, ParseIgnore("secret/\ncmd: rm"), Scope{Namespace: "n"}, captureNow)
		if ev == nil {
			return
		}
		b, _ := json.Marshal(ev)
		switch {
		case ev.Kind != KindEdit && ev.Kind != KindCommand:
			t.Fatalf("kind %q", ev.Kind)
		case ev.Kind == KindEdit && (ev.Path == "" || strings.HasPrefix(ev.Path, "/") || strings.HasPrefix(ev.Path, "../")):
			t.Fatalf("path %q", ev.Path)
		case strings.Contains(strings.ToLower(string(b)), "<private>"):
			t.Fatalf("a private span is left: %s", b)
		}
	})
}

// FuzzParseIgnore parses arbitrary exclusion files without panicking.
func FuzzParseIgnore(f *testing.F) {
	f.Add("secrets/\n*.pem\ncmd: terraform *\n/a/**/b?.md\n")
	f.Add("[\ncmd: (\n\\\n")
	f.Fuzz(func(t *testing.T, text string) {
		ig := ParseIgnore(text)
		_ = ig.Path("a/b.pem")
		_ = ig.Command("terraform apply ./x")
	})
}

// TestCompactEvent captures where the conversation stood before a
// compaction: the transcript's last turns, screened, one line.
func TestCompactEvent(t *testing.T) {
	t.Parallel()
	tr, err := filepath.Abs(filepath.Join("testdata", "transcript", "claude-code.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(map[string]any{"session_id": "s1", "hook_event_name": "PreCompact", "trigger": "auto", "transcript_path": tr})
	in, err := ParseToolInput(b)
	if err != nil {
		t.Fatal(err)
	}
	ev, _ := CompactEvent(ClaudeCode, in, Scope{Remote: "https://github.com/acme/api"}, captureNow)
	if ev.Kind != KindCompact || ev.Summary == "" || strings.Contains(ev.Summary, "\n") || ev.Remote == "" || ev.Namespace != "" || ev.ID == "" {
		t.Errorf("event = %+v", ev)
	}
	if later, _ := CompactEvent(ClaudeCode, in, Scope{Remote: "https://github.com/acme/api"}, captureNow.Add(time.Minute)); later.ID == ev.ID {
		t.Error("two compactions got one id")
	}
}

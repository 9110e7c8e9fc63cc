package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hearth-memory/hearth/cmd/hearth/internal/hook"
	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/testwait"
)

// captured lists the events waiting in e's capture spool.
func captured(e *hookEnv) []string {
	entries, _ := os.ReadDir(filepath.Join(e.cache, "capture"))
	var names []string
	for _, en := range entries {
		if strings.HasSuffix(en.Name(), ".json") {
			names = append(names, en.Name())
		}
	}
	return names
}

// observationsIn returns the live capture records of namespace ns by title.
func observationsIn(t *testing.T, td *testDaemon, ns string) map[string]*storage.Record {
	t.Helper()
	recs, err := td.db.Timeline(context.Background(), storage.TimelineQuery{Namespaces: []string{ns}, Limit: 500})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*storage.Record{}
	for _, r := range recs {
		if r.Source == storage.SourceCapture && r.Live() {
			out[r.Title] = r
		}
	}
	return out
}

// TestHook_CaptureProcess runs `hearth hook tool` as Claude Code does: tool
// hooks killed between spooling their event and sending it lose nothing
// (the next session start sends them, then shows where the session left
// off), and events sent again after a send that was not settled (the hook
// killed before it removed its files) are kept once.
func TestHook_CaptureProcess(t *testing.T) {
	// Not parallel: the hook's client keeps its shipped dial and send
	// timeouts, which a daemon slowed by tests running beside it misses.
	if testing.Short() {
		t.Skip("builds the hearth binary")
	}
	bin := buildHearth(t)
	td := startDaemon(t, testOptions())
	e := newHookEnv(t, td, hook.ClaudeCode, "")
	file := filepath.Join(e.repo, "internal", "billing", "x")
	calls := []map[string]any{
		{"hook_event_name": "PostToolUse", "tool_name": "Edit", "tool_use_id": "toolu_1", "tool_input": map[string]any{"file_path": file}},
		{"hook_event_name": "PostToolUse", "tool_name": "Edit", "tool_use_id": "toolu_2", "tool_input": map[string]any{"file_path": file}},
		{"hook_event_name": "PostToolUseFailure", "tool_name": "Bash", "tool_use_id": "toolu_3", "tool_input": map[string]any{"command": "go test ./internal/billing"},
			"error": "Exit code 1\n--- FAIL: TestRetry (0.00s)\nFAIL"},
		{"hook_event_name": "PostToolUse", "tool_name": "Edit", "tool_use_id": "toolu_4", "tool_input": map[string]any{"file_path": file}},
	}
	for i, c := range calls {
		c["session_id"] = "cap-1"
		cmd := hookCmd(bin, e, td.url, "tool", c, "HEARTH_FAILPOINT=hook-tool-after-spool")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		testwait.WaitFor(t, "the event is spooled", func() bool { return len(captured(e)) == i+1 })
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
	}
	if obs := observationsIn(t, td, "github/acme/api"); len(obs) != 0 {
		t.Fatalf("observations before any send: %v", obs)
	}
	// Keep the spooled files, to send them again after they were delivered.
	saved := map[string][]byte{}
	for _, n := range captured(e) {
		b, err := os.ReadFile(filepath.Join(e.cache, "capture", n))
		if err != nil {
			t.Fatal(err)
		}
		saved[n] = b
	}

	// The next session's start sends them first and shows where cap-1 left off.
	start := hookCmd(bin, e, td.url, "session-start", map[string]any{"session_id": "cap-2", "source": "startup"})
	out, err := start.Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Where we left off", "touched: internal/billing/x", "left failing: `go test ./internal/billing`: TestRetry"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("session start lacks %q:\n%s", want, out)
		}
	}
	if n := captured(e); len(n) != 0 {
		t.Errorf("%d events still spooled after the session start", len(n))
	}
	check := func(when string) {
		t.Helper()
		obs := observationsIn(t, td, "github/acme/api")
		if r := obs["Edited internal/billing/x"]; r == nil || !strings.Contains(r.Content, ": 3 edits.") {
			t.Errorf("%s: edit observation = %+v", when, r)
		}
		if r := obs["`go test ./internal/billing` fails: TestRetry"]; r == nil || !strings.Contains(r.Content, "ran 1 time (1 failed)") {
			t.Errorf("%s: command observation = %+v", when, r)
		}
		if len(obs) != 2 {
			t.Errorf("%s: %d observations, want 2", when, len(obs))
		}
	}
	check("after the send")

	// Put the files back, as a hook killed after its send but before it
	// removed them leaves them: the next send (here the drainer's) sends
	// them again, and the server keeps each event once.
	for n, b := range saved {
		if err := os.WriteFile(filepath.Join(e.cache, "capture", n), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	again := hookCmd(bin, e, td.url, "drain", nil)
	if err := again.Run(); err != nil {
		t.Fatal(err)
	}
	if n := captured(e); len(n) != 0 {
		t.Errorf("%d events still spooled after the replay", len(n))
	}
	check("after the replay")
	if l := e.logText(); strings.Contains(l, e.cfg.Token) {
		t.Error("the log holds the token")
	}
}

// BenchmarkCaptureSession runs a scripted session of 200 tool calls
// through the built binary, each a `hearth hook tool` process against a
// local daemon: 120 edits of 12 files, 60 runs of 6 test commands (two
// failing then passing, one flaky, one left failing, two passing) and 20
// read-only commands. It reports the observations the session left
// (observations/session) and the bytes the next session start adds for
// "where we left off" (left-off-bytes: the hook's text; left-off-json: the
// bootstrap reply's left_off).
func BenchmarkCaptureSession(b *testing.B) {
	dir := b.TempDir()
	bin := filepath.Join(dir, "hearth")
	build := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("build: %v\n%s", err, out)
	}
	td := startDaemon(b, testOptions())
	for i := 0; i < b.N; i++ {
		repo := filepath.Join(dir, fmt.Sprintf("repo%d", i))
		os.MkdirAll(filepath.Join(repo, ".git"), 0o755)
		os.WriteFile(filepath.Join(repo, ".git", "config"), []byte(fmt.Sprintf("[remote \"origin\"]\n\turl = git@github.com:acme/cap%d.git\n", i)), 0o644)
		ns := fmt.Sprintf("github/acme/cap%d", i)
		cache := b.TempDir()
		run := func(event string, fields map[string]any) []byte {
			in := map[string]any{"cwd": repo, "session_id": fmt.Sprintf("cap-%d", i)}
			for k, v := range fields {
				in[k] = v
			}
			raw, _ := json.Marshal(in)
			cmd := exec.Command(bin, "hook", event, "--harness", "claude-code")
			cmd.Stdin = bytes.NewReader(raw)
			cmd.Env = []string{"HEARTH_URL=" + td.url, "HEARTH_TOKEN=" + td.tokens["claude-code"], "HEARTH_CACHE_DIR=" + cache, "HOME=" + dir}
			out, err := cmd.Output()
			if err != nil {
				b.Fatalf("hook %s: %v", event, err)
			}
			return out
		}
		calls := 0
		tool := func(event, name string, input map[string]any, errText string) {
			calls++
			f := map[string]any{"hook_event_name": event, "tool_name": name, "tool_input": input, "tool_use_id": fmt.Sprintf("toolu_%d", calls)}
			if errText != "" {
				f["error"] = errText
			}
			run("tool", f)
		}
		for k := range 120 {
			tool("PostToolUse", "Edit", map[string]any{"file_path": filepath.Join(repo, "pkg", fmt.Sprintf("f%d.go", k%12))}, "")
		}
		// Outcomes per command, by run: F fails, P passes.
		scripts := map[string]string{
			"go test ./pkg/a": "FFFFFPPPPP", "go test ./pkg/b": "FPPPPPPPPP", "go test ./pkg/c": "PFPFPFPFPP",
			"go test ./pkg/d": "PPPPPPPPFF", "make build": "PPPPPPPPPP", "make lint": "PPPPPPPPPP",
		}
		for r := range 10 {
			for _, c := range slices.Sorted(maps.Keys(scripts)) {
				if scripts[c][r] == 'F' {
					tool("PostToolUseFailure", "Bash", map[string]any{"command": c}, "Exit code 1\n--- FAIL: TestThing (0.01s)\nFAIL")
				} else {
					tool("PostToolUse", "Bash", map[string]any{"command": c}, "")
				}
			}
		}
		for k := range 20 {
			tool("PostToolUse", "Bash", map[string]any{"command": fmt.Sprintf("cat pkg/f%d.go", k%12)}, "")
		}
		if calls != 200 {
			b.Fatalf("%d tool calls, want 200", calls)
		}
		// The next session: its start sends what may still wait, then shows
		// where cap-i left off.
		out := string(run("session-start", map[string]any{"session_id": fmt.Sprintf("next-%d", i), "source": "startup"}))
		at := strings.Index(out, "Where we left off")
		if at < 0 {
			b.Fatalf("the next session start does not say where we left off:\n%s", out)
		}
		var ctx struct {
			HookSpecificOutput struct {
				AdditionalContext string `json:"additionalContext"`
			} `json:"hookSpecificOutput"`
		}
		if err := json.Unmarshal([]byte(out), &ctx); err != nil {
			b.Fatal(err)
		}
		text := ctx.HookSpecificOutput.AdditionalContext
		left := text[strings.Index(text, "Where we left off"):]
		boot := restTransport{td}.call(b, td.tokens["claude-code"], "memory_bootstrap", map[string]any{"namespace": ns, "session_id": "other"})
		lo, _ := json.Marshal(boot.body["left_off"])
		recs, err := td.db.Timeline(context.Background(), storage.TimelineQuery{Namespaces: []string{ns}, Limit: 500})
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for _, r := range recs {
			if r.Source == storage.SourceCapture {
				n++
			}
		}
		if i == 0 {
			b.Logf("observations: %d; where we left off (%d bytes):\n%s", n, len(left), left)
		}
		b.ReportMetric(float64(n), "observations/session")
		b.ReportMetric(float64(len(left)), "left-off-bytes")
		b.ReportMetric(float64(len(lo)), "left-off-json")
	}
}

// TestHook_ToolNoTimeLeft: the tool hook's 80 ms count from the process's
// start, so a hook whose start-up already took them (a loaded machine)
// spools its event and exits without trying to send; one with time left
// sends what waits, that event included (docs/capture.md).
func TestHook_ToolNoTimeLeft(t *testing.T) {
	t.Parallel()
	td := startDaemon(t, testOptions())
	proxy := newCountingProxy(t, td.url)
	e := newHookEnv(t, td, hook.ClaudeCode, proxy.URL)
	edit := func(id string) map[string]any {
		return map[string]any{"hook_event_name": "PostToolUse", "tool_name": "Edit", "tool_use_id": id,
			"tool_input": map[string]any{"file_path": filepath.Join(e.repo, "internal", "billing", "x")}}
	}
	e.cfg.Start = time.Now().Add(-time.Second)
	e.run(t, "tool", edit("toolu_late"))
	if n := len(captured(e)); n != 1 {
		t.Fatalf("got %d events spooled, want the late hook's one", n)
	}
	if n := proxy.count("/api/memory_capture"); n != 0 {
		t.Errorf("the late hook sent %d time(s), want none", n)
	}
	if l := e.logText(); !strings.Contains(l, "capture: no time left to send") {
		t.Errorf("log lacks why nothing was sent:\n%s", l)
	}
	// A hook with its 80 ms ahead sends both events. (The race detector
	// slows the server; a minute keeps this about what is sent, and the
	// deadline itself is the late run's.)
	e.cfg.Start = time.Now().Add(time.Minute - 80*time.Millisecond)
	e.run(t, "tool", edit("toolu_next"))
	if n := len(captured(e)); n != 0 || proxy.count("/api/memory_capture") != 1 {
		t.Errorf("got %d events left and %d sends, want none left after one send", n, proxy.count("/api/memory_capture"))
	}
}

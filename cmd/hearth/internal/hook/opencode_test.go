package hook

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// readInputFile reads one of testdata/input's hook inputs.
func readInputFile(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "input", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestParseInput_OpenCodeMessages reads the turns Hearth's opencode plugin
// sends with session-end: user and assistant turns with text, in order.
func TestParseInput_OpenCodeMessages(t *testing.T) {
	t.Parallel()
	in, err := ParseInput(readInputFile(t, "opencode-session-end.json"))
	if err != nil {
		t.Fatal(err)
	}
	want := []Turn{
		{"user", `"how do we deploy billing?"`},
		{"assistant", "Run make deploy once the canary passes."},
		{"user", "and roll back?"},
		{"assistant", "Roll back with make rollback."},
	}
	if !slices.Equal(in.Messages, want) || in.TranscriptPath != "" || in.Reason != "exit" {
		t.Fatalf("input = %+v, want messages %+v", in, want)
	}
	summary, notes := SummaryAndNotes(in.Messages)
	if summary != "Roll back with make rollback." || !strings.HasPrefix(notes, `User: "how do we deploy billing?"`) {
		t.Errorf("summary %q, notes %q", summary, notes)
	}
	// The newest maxInputTurns are kept; a list of something else is none.
	var many []map[string]string
	for i := 0; i < maxInputTurns+5; i++ {
		many = append(many, map[string]string{"role": "user", "text": strings.Repeat("x", i+1)})
	}
	b, _ := json.Marshal(map[string]any{"session_id": "s", "messages": many})
	if in, err := ParseInput(b); err != nil || len(in.Messages) != maxInputTurns || in.Messages[0].Text != strings.Repeat("x", 6) {
		t.Errorf("%d turns kept (err %v), want the newest %d", len(in.Messages), err, maxInputTurns)
	}
	if in, err := ParseInput([]byte(`{"session_id":"s","messages":{"role":"user"}}`)); err != nil || in.Messages != nil {
		t.Errorf("messages that are no list read as %+v (%v)", in.Messages, err)
	}
}

// TestBuildEvent_OpenCode captures opencode's tool calls as the plugin
// passes them: bash with its exit code in the result's metadata, edit and
// write by filePath, apply_patch by patchText.
func TestBuildEvent_OpenCode(t *testing.T) {
	t.Parallel()
	sc := Scope{Namespace: "local/repo"}
	in, err := ParseToolInput(readInputFile(t, "opencode-tool-bash.json"))
	if err != nil {
		t.Fatal(err)
	}
	in.Cwd = "/repo"
	ev, _ := BuildEvent(OpenCode, in, false, testRepo, nil, sc, captureNow)
	if ev == nil || ev.Kind != KindCommand || ev.OK || ev.ExitCode != 3 || !slices.Equal(ev.Tests, []string{"TestX"}) ||
		ev.Harness != "opencode" || !strings.HasPrefix(ev.ID, "oc-") {
		t.Fatalf("bash event = %+v", ev)
	}
	for _, c := range []struct {
		tool           string
		args, response map[string]any
		path           string
		created        bool
	}{
		{"edit", map[string]any{"filePath": "/repo/sub/x.go", "oldString": "a", "newString": "b"}, map[string]any{"output": "Edit applied.", "metadata": map[string]any{}}, "sub/x.go", false},
		{"write", map[string]any{"filePath": "/repo/new.go", "content": "package x"}, map[string]any{"metadata": map[string]any{"exists": false}}, "new.go", true},
		{"write", map[string]any{"filePath": "/repo/old.go", "content": "package x"}, map[string]any{"metadata": map[string]any{"exists": true}}, "old.go", false},
		{"apply_patch", map[string]any{"patchText": "*** Begin Patch\n*** Add File: /repo/p.go\n+package p\n*** End Patch"}, map[string]any{"output": "Success."}, "p.go", true},
	} {
		b, _ := json.Marshal(map[string]any{"session_id": "ses_1", "cwd": "/repo", "hook_event_name": "tool.execute.after",
			"tool_name": c.tool, "tool_input": c.args, "tool_response": c.response, "tool_use_id": "call_" + c.path})
		in, err := ParseToolInput(b)
		if err != nil {
			t.Fatal(err)
		}
		ev, _ := BuildEvent(OpenCode, in, false, testRepo, nil, sc, captureNow)
		if ev == nil || ev.Kind != KindEdit || ev.Path != c.path || ev.Created != c.created {
			t.Errorf("%s %v: event = %+v, want an edit of %s (created %v)", c.tool, c.args, ev, c.path, c.created)
		}
	}
	// A passing command: the exit code says so.
	b, _ := json.Marshal(map[string]any{"session_id": "ses_1", "cwd": "/repo", "tool_name": "bash",
		"tool_input": map[string]any{"command": "make build"}, "tool_response": map[string]any{"output": "ok\n", "metadata": map[string]any{"exit": 0}}})
	in, _ = ParseToolInput(b)
	if ev, _ := BuildEvent(OpenCode, in, false, testRepo, nil, sc, captureNow); ev == nil || !ev.OK || ev.ExitCode != 0 {
		t.Errorf("passing bash event = %+v", ev)
	}
}

// TestCompactEvent_OpenCode takes the summary from the turns the plugin
// sends, opencode having no transcript file.
func TestCompactEvent_OpenCode(t *testing.T) {
	t.Parallel()
	in, err := ParseToolInput(readInputFile(t, "opencode-session-end.json"))
	if err != nil {
		t.Fatal(err)
	}
	ev, _ := CompactEvent(OpenCode, in, Scope{Namespace: "local/repo"}, captureNow)
	if ev.Kind != KindCompact || ev.Summary != "Roll back with make rollback." || !strings.HasPrefix(ev.ID, "oc-") {
		t.Errorf("compact event = %+v", ev)
	}
}

// TestRender_OpenCode: opencode's context is plain text, as Codex's, which
// the plugin adds to the message unchanged.
func TestRender_OpenCode(t *testing.T) {
	t.Parallel()
	if h, err := ParseHarness("opencode"); err != nil || h != OpenCode {
		t.Fatalf("ParseHarness(opencode) = %q, %v", h, err)
	}
	for _, c := range []struct{ event, text string }{
		{EventSessionStart, SessionStartText(goldenBootstrap)},
		{EventPrompt, RecallText(goldenHits)},
	} {
		out := Render(OpenCode, c.event, c.text)
		if !bytes.Equal(out, Render(Codex, c.event, c.text)) || bytes.HasPrefix(out, []byte("{")) || !bytes.Contains(out, []byte(goldenHits[0].ID)) && c.event == EventPrompt {
			t.Errorf("%s: %s", c.event, out)
		}
	}
	if a, b := closeOpID(OpenCode, "s", map[string]any{}), closeOpID(Codex, "s", map[string]any{}); !strings.HasPrefix(a, "oc-") || a[3:] == b[3:] {
		t.Errorf("opencode close op %s, codex %s: want oc- and another id", a, b)
	}
}

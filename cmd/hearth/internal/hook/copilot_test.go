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

// readCopilotInput reads one of the payloads GitHub Copilot CLI 1.0.102
// wrote to a hook configured under a PascalCase event name (testdata/input,
// paths rewritten to /home/ann/api).
func readCopilotInput(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "input", "copilot-"+name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRender_Copilot holds Copilot's output shape: exactly a top-level
// additionalContext, the one form Copilot 1.0.102 puts before the model
// (it drops Claude Code's hookSpecificOutput and plain text).
func TestRender_Copilot(t *testing.T) {
	t.Parallel()
	golden(t, "copilot-session-start.out", Render(Copilot, EventSessionStart, SessionStartText(goldenBootstrap)))
	golden(t, "copilot-prompt.out", Render(Copilot, EventPrompt, RecallText(goldenHits)))
	if out := Render(Copilot, EventPrompt, RecallText(nil)); out != nil {
		t.Errorf("no hits rendered %q, want nothing", out)
	}
	text := SessionStartText(goldenBootstrap)
	var got map[string]string
	dec := json.NewDecoder(bytes.NewReader(Render(Copilot, EventSessionStart, text)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got["additionalContext"] != strings.TrimSpace(text) {
		t.Errorf("copilot output = %v", got)
	}
}

// TestParseHarness_Copilot accepts copilot and names it in the refusal.
func TestParseHarness_Copilot(t *testing.T) {
	t.Parallel()
	if h, err := ParseHarness("copilot"); err != nil || h != Copilot {
		t.Errorf("ParseHarness(copilot) = %q, %v", h, err)
	}
	if _, err := ParseHarness("gh-copilot"); err == nil || !strings.Contains(err.Error(), "copilot") {
		t.Errorf("ParseHarness(gh-copilot) error = %v, want one naming copilot", err)
	}
}

// TestParseInput_Copilot reads the session-start, prompt and session-end
// payloads: snake_case, a source of "new", and no transcript_path.
func TestParseInput_Copilot(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, src, prompt, reason string }{
		{"session-start", "new", "", ""},
		{"prompt", "", "how do we retry billing calls?", ""},
		{"session-end", "", "", "complete"},
	} {
		in, err := ParseInput(readCopilotInput(t, tc.name))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if in.SessionID != "4f0b7a52-2c4e-4d7e-9a51-6a1d2b8f3c11" || in.Cwd != "/home/ann/api" || in.Source != tc.src ||
			in.Prompt != tc.prompt || in.Reason != tc.reason || in.TranscriptPath != "" {
			t.Errorf("%s: got %+v", tc.name, in)
		}
	}
}

// TestBuildEvent_Copilot captures Copilot's tool payloads: Claude Code's
// tool names with Copilot's own arguments (path) and result
// (tool_result.text_result_for_llm, the exit code in a shellId line).
func TestBuildEvent_Copilot(t *testing.T) {
	t.Parallel()
	repo, sc := Repo{Root: "/home/ann/api"}, Scope{Namespace: "github/ann/api"}
	build := func(name string) *Event {
		t.Helper()
		in, err := ParseToolInput(readCopilotInput(t, name))
		if err != nil {
			t.Fatal(err)
		}
		ev, _ := BuildEvent(Copilot, in, in.HookEventName == "PostToolUseFailure", repo, nil, sc, captureNow)
		if ev == nil {
			t.Fatalf("%s: no event", name)
		}
		if !strings.HasPrefix(ev.ID, "cp-") || ev.Harness != "copilot" || ev.SessionID != "4f0b7a52-2c4e-4d7e-9a51-6a1d2b8f3c11" {
			t.Errorf("%s: id %q, harness %q, session %q", name, ev.ID, ev.Harness, ev.SessionID)
		}
		return ev
	}
	if ev := build("tool-bash"); ev.Kind != KindCommand || ev.Command != "go test ./..." || ev.OK || ev.ExitCode != 1 ||
		len(ev.Tests) != 1 || ev.Tests[0] != "TestRetry" {
		t.Errorf("bash: %+v", ev)
	}
	if ev := build("tool-write"); ev.Kind != KindEdit || ev.Path != "docs/retry.md" || !ev.Created {
		t.Errorf("write: %+v", ev)
	}
	if ev := build("tool-edit"); ev.Kind != KindEdit || ev.Path != "billing/retry.go" || ev.Created {
		t.Errorf("edit: %+v", ev)
	}
	if ev := build("tool-failure"); ev.Kind != KindCommand || ev.Command != "make lint" || ev.OK || ev.ExitCode != -1 ||
		len(ev.Errors) == 0 {
		t.Errorf("failure: %+v", ev)
	}
	// A passing run: exit code 0 in the shellId line.
	in, err := ParseToolInput([]byte(`{"session_id":"s","hook_event_name":"PostToolUse","cwd":"/home/ann/api","tool_name":"Bash",` +
		`"tool_input":{"command":"make test"},"tool_result":{"result_type":"success","text_result_for_llm":"ok\n<shellId: 3 completed with exit code 0>"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if ev, _ := BuildEvent(Copilot, in, false, repo, nil, sc, captureNow); ev == nil || !ev.OK || ev.ExitCode != 0 {
		t.Errorf("passing run: %+v", ev)
	}
}

// TestCloseOpID_Copilot keeps Copilot's closes apart from the other
// harnesses' for the same session id.
func TestCloseOpID_Copilot(t *testing.T) {
	t.Parallel()
	args := map[string]any{"namespace": "github/ann/api"}
	cp, cc := closeOpID(Copilot, "s", args), closeOpID(ClaudeCode, "s", args)
	if !strings.HasPrefix(cp, "cp-") || cp[3:] == cc[3:] {
		t.Errorf("copilot op_id %q, claude-code %q", cp, cc)
	}
}

// TestReadTranscriptTail_Copilot reads Copilot's events.jsonl: the prompt
// as typed and the answers with text, not the hook output, the system
// message, tool requests or results.
func TestReadTranscriptTail_Copilot(t *testing.T) {
	t.Parallel()
	turns, whole, err := ReadTranscriptTail(filepath.Join("testdata", "transcript", "copilot.jsonl"))
	if err != nil || !whole {
		t.Fatalf("ReadTranscriptTail: %v, whole %v", err, whole)
	}
	want := []Turn{
		{"user", "Move the job queue to SQLite"},
		{"assistant", "Moved the job queue to SQLite: leases survive restarts."},
	}
	if !slices.Equal(turns, want) {
		t.Errorf("got %q\nwant %q", turns, want)
	}
}

// TestCopilotTranscript finds a session's events.jsonl under $COPILOT_HOME,
// else ~/.copilot, and nothing for a missing file or a session id that is
// not one plain path element.
func TestCopilotTranscript(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	sid := "4f0b7a52-2c4e-4d7e-9a51-6a1d2b8f3c11"
	p := filepath.Join(home, ".copilot", "session-state", sid, "events.jsonl")
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	if got := CopilotTranscript(env(map[string]string{"HOME": home}), sid); got != p {
		t.Errorf("under HOME: %q, want %q", got, p)
	}
	if got := CopilotTranscript(env(map[string]string{"HOME": "/nowhere", "COPILOT_HOME": filepath.Join(home, ".copilot")}), sid); got != p {
		t.Errorf("under COPILOT_HOME: %q, want %q", got, p)
	}
	for _, bad := range []string{"other-session", "../" + sid, sid + "/..", ".", "..", "a b", ""} {
		if got := CopilotTranscript(env(map[string]string{"HOME": home}), bad); got != "" {
			t.Errorf("session id %q gave %q", bad, got)
		}
	}
	if got := CopilotTranscript(env(nil), sid); got != "" {
		t.Errorf("no HOME gave %q", got)
	}
}

// TestCompactEvent_Copilot reads Copilot's PreCompact payload: its
// transcript_path names the session's events.jsonl, whose last answer
// becomes the event's summary.
func TestCompactEvent_Copilot(t *testing.T) {
	t.Parallel()
	in, err := ParseToolInput(readCopilotInput(t, "precompact"))
	if err != nil {
		t.Fatal(err)
	}
	if in.Trigger != "manual" || !strings.HasSuffix(in.TranscriptPath, "/events.jsonl") {
		t.Fatalf("input = %+v", in)
	}
	in.TranscriptPath = filepath.Join("testdata", "transcript", "copilot.jsonl")
	ev, _ := CompactEvent(Copilot, in, Scope{Namespace: "github/ann/api"}, captureNow)
	if ev.Kind != KindCompact || ev.Summary != "Moved the job queue to SQLite: leases survive restarts." || !strings.HasPrefix(ev.ID, "cp-") {
		t.Errorf("event = %+v", ev)
	}
}

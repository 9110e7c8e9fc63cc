package hook

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestStripHookContext leaves the prompt the user wrote: Gemini CLI puts the
// session start's context before the first prompt, and a hook's context
// after it, each as <hook_context>…</hook_context>.
func TestStripHookContext(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"<hook_context>Hearth memory for x: nothing stored yet.</hook_context>\n\nhow do we deploy?":    "how do we deploy?",
		"how do we deploy?\n\n<hook_context>recall</hook_context>":                                      "how do we deploy?",
		"<hook_context>a</hook_context><hook_context>b</hook_context> q <hook_context>c</hook_context>": "q",
		"<hook_context>never closed":        "<hook_context>never closed",
		"plain prompt":                      "plain prompt",
		"a </hook_context>":                 "a </hook_context>",
		"<hook_context>only</hook_context>": "",
	} {
		if got := StripHookContext(in); got != want {
			t.Errorf("StripHookContext(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestBuildEvent_GeminiCLI reads Gemini CLI's AfterTool input (captured from
// 0.61.0): its shell tool's failure with the exit code and failing test
// from llmContent, a passing run (no "Exit Code" line), and an edit.
func TestBuildEvent_GeminiCLI(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join("testdata", "input", "gemini-cli-after-tool.json"))
	if err != nil {
		t.Fatal(err)
	}
	in, err := ParseToolInput(b)
	if err != nil {
		t.Fatal(err)
	}
	in.Cwd = testRepo.Root
	ev, _ := BuildEvent(GeminiCLI, in, false, testRepo, nil, Scope{Namespace: "n"}, captureNow)
	if ev == nil || ev.Kind != KindCommand || ev.Command != "sh check.sh" || ev.OK || ev.ExitCode != 1 ||
		!slices.Equal(ev.Tests, []string{"TestCheck"}) || ev.Harness != "gemini-cli" || ev.ID[:3] != "gm-" {
		t.Fatalf("failing run: %+v", ev)
	}
	in.ToolResponse = []byte(`{"llmContent":"<untrusted_context>\nOutput: ok\nProcess Group PGID: 7\n</untrusted_context>","returnDisplay":"ok"}`)
	if ev, _ := BuildEvent(GeminiCLI, in, false, testRepo, nil, Scope{Namespace: "n"}, captureNow); ev == nil || !ev.OK || ev.ExitCode != 0 {
		t.Errorf("passing run: %+v", ev)
	}
	in.ToolName, in.ToolInputRaw = "replace", []byte(`{"file_path":"`+filepath.Join(testRepo.Root, "queue.go")+`","old_string":"a","new_string":"b"}`)
	if ev, _ := BuildEvent(GeminiCLI, in, false, testRepo, nil, Scope{Namespace: "n"}, captureNow); ev == nil || ev.Kind != KindEdit || ev.Path != "queue.go" {
		t.Errorf("edit: %+v", ev)
	}
}

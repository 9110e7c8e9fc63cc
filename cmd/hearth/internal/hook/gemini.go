package hook

import (
	"encoding/json"
	"strings"
)

// Gemini CLI (docs/gemini-cli.md) runs command hooks on its own events:
// SessionStart, BeforeAgent (a prompt), AfterTool, PreCompress and
// SessionEnd. Its stdin carries the common fields Claude Code's does
// (session_id, transcript_path, cwd, hook_event_name, source, prompt,
// reason, tool_name, tool_input, tool_response, trigger), so Input and
// ToolInput read it as they are; the differences are below.

// Gemini CLI's names for the events whose output carries context.
const (
	geminiEventSessionStart = "SessionStart"
	geminiEventPrompt       = "BeforeAgent"
)

// geminiEvent is Gemini CLI's name for a context event Render is given in
// Claude Code's spelling.
func geminiEvent(event string) string {
	if event == EventPrompt {
		return geminiEventPrompt
	}
	return geminiEventSessionStart
}

// hookContextOpen and hookContextClose wrap what a Gemini CLI hook
// injected: in a non-interactive run the session start's context is put
// before the prompt as <hook_context>…</hook_context>, and BeforeAgent's
// stdin carries the prompt with it. Gemini CLI escapes < and > inside the
// context, so the first close tag ends it.
const (
	hookContextOpen  = "<hook_context>"
	hookContextClose = "</hook_context>"
)

// StripHookContext removes the <hook_context> blocks Gemini CLI put before
// or after a prompt, leaving what the user wrote: recall searches with
// that, not with the session start's bootstrap.
func StripHookContext(s string) string {
	for {
		t := strings.TrimSpace(s)
		switch {
		case strings.HasPrefix(t, hookContextOpen):
			end := strings.Index(t, hookContextClose)
			if end < 0 {
				return t
			}
			s = t[end+len(hookContextClose):]
		case strings.HasSuffix(t, hookContextClose):
			start := strings.LastIndex(t, hookContextOpen)
			if start < 0 {
				return t
			}
			s = t[:start]
		default:
			return t
		}
	}
}

// geminiSucceeded reads Gemini CLI's AfterTool tool_response
// {llmContent, returnDisplay, error}: its shell tool names the exit code
// in llmContent only when it is not 0, so a response with llmContent, no
// such line (the caller looked) and no error is a run that passed.
func geminiSucceeded(resp map[string]json.RawMessage) bool {
	var content string
	if json.Unmarshal(resp["llmContent"], &content) != nil {
		return false
	}
	e, ok := resp["error"]
	return !ok || string(e) == "null"
}

// geminiShellOutput is the output of Gemini CLI's shell tool from its
// llmContent: "<untrusted_context>\nOutput: …\nExit Code: N\n…</untrusted_context>"
// without the wrapper and the "Output: " label, so a runner's first line
// reads as the runner wrote it.
func geminiShellOutput(s string) string {
	s = strings.TrimSpace(s)
	s = strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(s, "<untrusted_context>"), "</untrusted_context>"))
	return strings.TrimPrefix(s, "Output: ")
}

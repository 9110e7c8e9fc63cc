package hook

import (
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// OpenCode reaches the hooks through Hearth's opencode plugin
// (docs/opencode.md): a module opencode loads at start, which runs `hearth
// hook <event> --harness opencode` with the common JSON on stdin
// (session_id, cwd, hook_event_name, prompt) and two shapes of its own:
//
//   - messages, [{"role":"user"|"assistant","text":…}], the session's last
//     turns, sent with session-end and compact: opencode keeps its history
//     in a database, not in a transcript file a hook could read;
//   - the tool hook's tool_name, tool_input and tool_response as opencode's
//     tool.execute.after gives them: tools bash ({command}), edit and write
//     ({filePath}), apply_patch ({patchText}); a result {output, metadata}
//     whose metadata holds bash's exit code (exit) and write's exists.
//
// The plugin puts what a hook prints (plain text) into the user's message
// as a synthetic text part, which the model reads with the prompt.
const OpenCode Harness = "opencode"

// maxInputTurns bounds the turns read from an input's messages: the
// session close keeps the newest that fit its notes (SummaryAndNotes).
const maxInputTurns = 200

// parseMessages reads an input's messages: the user and assistant turns
// with text, the newest maxInputTurns, each as valid UTF-8. Anything else
// (another role, a text of another type, an entry that is no object) is
// passed over.
func parseMessages(raw json.RawMessage) []Turn {
	var list []json.RawMessage
	if json.Unmarshal(raw, &list) != nil {
		return nil
	}
	if len(list) > maxInputTurns {
		list = list[len(list)-maxInputTurns:]
	}
	var turns []Turn
	for _, item := range list {
		var m struct {
			Role string `json:"role"`
			Text string `json:"text"`
		}
		if json.Unmarshal(item, &m) != nil || (m.Role != "user" && m.Role != "assistant") {
			continue
		}
		text := strings.TrimSpace(strings.ToValidUTF8(m.Text, "\uFFFD"))
		if text == "" || !utf8.ValidString(text) {
			continue
		}
		turns = append(turns, Turn{Role: m.Role, Text: text})
	}
	return turns
}

// openCodeExit reads the exit code opencode's bash tool reports in its
// result's metadata ({"metadata":{"exit":N}}); ok is false when there is none.
func openCodeExit(resp map[string]json.RawMessage) (code int, ok bool) {
	var meta struct {
		Exit *int `json:"exit"`
	}
	if json.Unmarshal(resp["metadata"], &meta) != nil || meta.Exit == nil {
		return 0, false
	}
	return *meta.Exit, true
}

// openCodeCreated reads whether opencode's write tool made a new file: its
// result's metadata says whether the file existed before.
func openCodeCreated(resp json.RawMessage) bool {
	var r struct {
		Metadata struct {
			Exists *bool `json:"exists"`
		} `json:"metadata"`
	}
	return json.Unmarshal(resp, &r) == nil && r.Metadata.Exists != nil && !*r.Metadata.Exists
}

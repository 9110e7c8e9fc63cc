package hook

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// maxInputBytes bounds the JSON a harness writes to a hook's stdin. A
// prompt is the largest part; a larger input is not read.
const maxInputBytes = 4 << 20

// Input is the JSON both harnesses write to a command hook's stdin. Claude
// Code and Codex share these names; unknown fields are ignored, because each
// harness adds its own (prompt_id, turn_id, model, permission_mode, …).
type Input struct {
	SessionID      string `json:"session_id"`
	TranscriptPath string `json:"transcript_path"`
	Cwd            string `json:"cwd"`
	HookEventName  string `json:"hook_event_name"`
	// Source is SessionStart's startup, resume, clear, compact or fork.
	Source string `json:"source"`
	// Prompt is UserPromptSubmit's prompt.
	Prompt string `json:"prompt"`
	// Reason is SessionEnd's reason.
	Reason string `json:"reason"`
	// Messages are the session's last turns where the harness has no
	// transcript file to read (OpenCode's plugin sends them).
	Messages []Turn `json:"-"`
}

// ReadInput reads and decodes a hook's stdin. transcript_path may be null
// (Codex). It fails on input that is not one JSON object, is larger than
// maxInputBytes, or has no usable session_id.
func ReadInput(r io.Reader) (Input, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxInputBytes+1))
	if err != nil {
		return Input{}, fmt.Errorf("read stdin: %w", err)
	}
	if len(data) > maxInputBytes {
		return Input{}, fmt.Errorf("stdin is larger than %d bytes", maxInputBytes)
	}
	return ParseInput(data)
}

// ParseInput decodes the stdin JSON of a hook (see ReadInput).
func ParseInput(data []byte) (Input, error) {
	var in Input
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(data, &probe); err != nil || probe == nil {
		return Input{}, errors.New("stdin is not a JSON object")
	}
	// Decoding field by field tolerates a harness sending null or another
	// type where a string is expected: such a field reads as empty.
	for name, dst := range map[string]*string{
		"session_id": &in.SessionID, "transcript_path": &in.TranscriptPath, "cwd": &in.Cwd,
		"hook_event_name": &in.HookEventName, "source": &in.Source, "prompt": &in.Prompt, "reason": &in.Reason,
	} {
		if raw, ok := probe[name]; ok {
			_ = json.Unmarshal(raw, dst)
		}
	}
	if raw, ok := probe["messages"]; ok {
		in.Messages = parseMessages(raw)
	}
	switch sid := in.SessionID; {
	case strings.TrimSpace(sid) == "":
		return Input{}, errors.New("stdin has no session_id")
	case !utf8.ValidString(sid) || utf8.RuneCountInString(sid) > maxSessionIDChars ||
		strings.IndexFunc(sid, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0:
		return Input{}, errors.New("stdin has a session_id Hearth cannot keep")
	}
	if !utf8.ValidString(in.Prompt) {
		in.Prompt = strings.ToValidUTF8(in.Prompt, "\uFFFD")
	}
	return in, nil
}

// maxSessionIDChars is the server's limit on a session id (memory_session_close).
const maxSessionIDChars = 128

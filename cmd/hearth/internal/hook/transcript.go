package hook

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// Limits of what session-end takes from a transcript.
const (
	// transcriptTailBytes is how much of the transcript's end is read.
	transcriptTailBytes = 512 << 10
	// MaxSummaryChars bounds the summary: the last answer, cut at a word.
	MaxSummaryChars = 2000
	// MaxNotesBytes bounds the notes: the last turns, newest kept.
	MaxNotesBytes = 8 << 10
	// maxTurnChars bounds one turn within the notes.
	maxTurnChars = 1000
)

// CopilotTranscript is where Copilot keeps a session's events.jsonl
// ($COPILOT_HOME, else ~/.copilot, then session-state/<id>/events.jsonl):
// its SessionEnd payload names no transcript (docs/copilot.md). It is ""
// for a session id that is not one plain path element, or when the file
// does not exist.
func CopilotTranscript(env func(string) string, sessionID string) string {
	dir := env("COPILOT_HOME")
	if dir == "" {
		home := env("HOME")
		if home == "" {
			return ""
		}
		dir = filepath.Join(home, ".copilot")
	}
	if !copilotSessionID().MatchString(sessionID) {
		return ""
	}
	p := filepath.Join(dir, "session-state", sessionID, "events.jsonl")
	if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() {
		return ""
	}
	return p
}

// copilotSessionID is what a Copilot session id may be to name a folder:
// letters, digits, '-' and '_' (Copilot's are UUIDs).
var copilotSessionID = lazyRegexp(`^[A-Za-z0-9_-]{1,128}$`)

// Turn is one user prompt or assistant answer of a transcript.
type Turn struct {
	Role string // user or assistant
	Text string
}

// ReadTranscriptTail returns the conversation turns found in the last
// transcriptTailBytes of a Claude Code, Codex or Copilot transcript (JSON lines),
// and whether that was the whole file. Tool calls, tool results, hook
// output and harness notes are skipped.
func ReadTranscriptTail(path string) (turns []Turn, whole bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, false, err
	}
	off := fi.Size() - transcriptTailBytes
	if off < 0 {
		off = 0
	}
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return nil, false, err
	}
	data, err := io.ReadAll(io.LimitReader(f, transcriptTailBytes))
	if err != nil {
		return nil, false, err
	}
	if off > 0 {
		// The first line is cut: start after it.
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			data = data[i+1:]
		} else {
			data = nil
		}
	}
	return parseTranscript(data), off == 0, nil
}

// transcriptLine holds the fields of the harnesses' transcript lines that
// carry conversation: Claude Code's {type, isMeta, message{role, content}},
// Codex's {type:"response_item", payload{type:"message", role, content}},
// Copilot's events.jsonl {type:"user.message"|"assistant.message",
// data{content}} and Gemini CLI's {type:"user"|"gemini", content}.
type transcriptLine struct {
	Type    string          `json:"type"`
	IsMeta  bool            `json:"isMeta"`
	Message *transcriptMsg  `json:"message"`
	Payload json.RawMessage `json:"payload"`
	Data    json.RawMessage `json:"data"`
	Content json.RawMessage `json:"content"`
}

type transcriptMsg struct {
	Type    string          `json:"type"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

func parseTranscript(data []byte) []Turn {
	var turns []Turn
	for _, line := range bytes.Split(data, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var tl transcriptLine
		if json.Unmarshal(line, &tl) != nil {
			continue
		}
		var m *transcriptMsg
		switch {
		case (tl.Type == "user" || tl.Type == "assistant") && tl.Message != nil && !tl.IsMeta:
			m = tl.Message // Claude Code
		case tl.Type == "response_item" && len(tl.Payload) > 0:
			var p transcriptMsg
			if json.Unmarshal(tl.Payload, &p) == nil && p.Type == "message" {
				m = &p // Codex
			}
		case (tl.Type == "user.message" || tl.Type == "assistant.message") && len(tl.Data) > 0:
			// Copilot: data.content is the prompt as typed (hook context
			// rides apart, in transformedContent) or the answer's text.
			var p transcriptMsg
			if json.Unmarshal(tl.Data, &p) == nil {
				p.Role = strings.TrimSuffix(tl.Type, ".message")
				m = &p
			}
		case (tl.Type == "user" || tl.Type == "gemini") && tl.Message == nil && len(tl.Content) > 0:
			// Gemini CLI: what its hooks injected rides in the user turn.
			role := "user"
			if tl.Type == "gemini" {
				role = "assistant"
			}
			m = &transcriptMsg{Role: role, Content: mustText(StripHookContext(contentText(tl.Content)))}
		}
		if m == nil || (m.Role != "user" && m.Role != "assistant") {
			continue
		}
		text := strings.TrimSpace(contentText(m.Content))
		// Harness notes ride in user turns as tagged blocks
		// (<environment_context>, <command-name>, <system-reminder>, …).
		if text == "" || strings.HasPrefix(text, "<") {
			continue
		}
		turns = append(turns, Turn{Role: m.Role, Text: text})
	}
	return turns
}

// mustText is s as a JSON string.
func mustText(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}

// contentText joins the text parts of a message's content: a string, or a
// list of parts of type text, input_text or output_text (Gemini CLI's
// parts have a text and no type).
func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return ""
	}
	var texts []string
	for _, p := range parts {
		switch p.Type {
		case "text", "input_text", "output_text", "":
			if t := strings.TrimSpace(p.Text); t != "" {
				texts = append(texts, t)
			}
		}
	}
	return strings.Join(texts, "\n")
}

// SummaryAndNotes makes a session close's summary and notes from the
// transcript's turns: the summary is the last answer (cut to
// MaxSummaryChars), the notes the newest turns that fit MaxNotesBytes, in
// order, each as "User: …" or "Assistant: …" cut to maxTurnChars.
func SummaryAndNotes(turns []Turn) (summary, notes string) {
	for i := len(turns) - 1; i >= 0; i-- {
		if turns[i].Role == "assistant" {
			summary = cutText(turns[i].Text, MaxSummaryChars)
			break
		}
	}
	var lines []string
	size := 0
	for i := len(turns) - 1; i >= 0; i-- {
		who := "User"
		if turns[i].Role == "assistant" {
			who = "Assistant"
		}
		line := who + ": " + cutText(turns[i].Text, maxTurnChars)
		if size+len(line)+1 > MaxNotesBytes {
			break
		}
		size += len(line) + 1
		lines = append(lines, line)
	}
	for i, j := 0, len(lines)-1; i < j; i, j = i+1, j-1 {
		lines[i], lines[j] = lines[j], lines[i]
	}
	return summary, strings.Join(lines, "\n")
}

// cutText cuts s to at most n characters, at a word when one is near,
// marking the cut with "…".
func cutText(s string, n int) string {
	s = strings.TrimSpace(s)
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)[:n-1]
	cut := string(r)
	if i := strings.LastIndexAny(cut, " \n\t"); i > len(cut)/2 {
		cut = cut[:i]
	}
	return strings.TrimSpace(cut) + "…"
}

package hook

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/hearth-memory/hearth/storage/textcheck"
)

// Harness names an agent harness whose hooks these are.
type Harness string

// The harnesses Hearth's hooks speak to.
const (
	ClaudeCode Harness = "claude-code"
	Codex      Harness = "codex"
	Copilot    Harness = "copilot"
	GeminiCLI  Harness = "gemini-cli"
)

// ParseHarness checks a --harness value.
func ParseHarness(s string) (Harness, error) {
	switch h := Harness(s); h {
	case ClaudeCode, Codex, Copilot, OpenCode, GeminiCLI:
		return h, nil
	}
	return "", fmt.Errorf("harness %q: want claude-code, codex, copilot, opencode or gemini-cli", s)
}

// idPrefix starts the ids a harness's hooks derive (session closes,
// captured events), so two harnesses never share one.
func (h Harness) idPrefix() string {
	switch h {
	case Codex:
		return "cx-"
	case Copilot:
		return "cp-"
	case OpenCode:
		return "oc-"
	case GeminiCLI:
		return "gm-"
	}
	return "cc-"
}

// Hook event names as the harnesses spell them.
const (
	EventSessionStart = "SessionStart"
	EventPrompt       = "UserPromptSubmit"
)

// MaxContextChars is the harnesses' cap on injected context: Claude Code
// writes longer hook output to a file and shows a preview; Codex spills it
// likewise. Counted in UTF-16 code units, as Claude Code's JavaScript counts
// (never fewer than characters).
const MaxContextChars = 10000

// cutNote ends context that was cut to fit MaxContextChars.
const cutNote = "(cut to fit the hook's 10,000-character limit)"

// Render returns what a hook prints to give a harness context: for Claude
// Code the JSON form {"hookSpecificOutput":{"hookEventName", "additionalContext"}},
// which it injects as a system reminder; for Gemini CLI the same JSON with
// its own event name (it shows plain text to the user, not the model, and
// puts additionalContext beside the prompt); for Codex plain text, which it
// injects as a developer message (and for OpenCode plain text, which
// Hearth's plugin adds to the user's message). Codex refuses JSON with keys it does not
// know and fails output that looks like JSON but is not its schema, so plain
// text (never starting with '{' or '[') is the shape that cannot break.
// GitHub Copilot CLI reads a top-level {"additionalContext"} and ignores
// both Claude Code's nested form and plain text (docs/copilot.md).
// Empty text renders as nothing: the hook prints nothing at all. Control
// characters (but tab and line breaks) and bidirectional overrides are
// folded to U+FFFD first (textcheck.Fold): records stored before the server
// refused them must not reach the agent's context or terminal as escapes.
func Render(h Harness, event, text string) []byte {
	text = FitContext(textcheck.Fold(text))
	if text == "" {
		return nil
	}
	if h == Codex || h == OpenCode {
		return []byte(text + "\n")
	}
	if h == Copilot {
		b, _ := json.Marshal(struct {
			AdditionalContext string `json:"additionalContext"`
		}{text})
		return append(b, '\n')
	}
	var out struct {
		HookSpecificOutput struct {
			HookEventName     string `json:"hookEventName"`
			AdditionalContext string `json:"additionalContext"`
		} `json:"hookSpecificOutput"`
	}
	if h == GeminiCLI {
		event = geminiEvent(event)
	}
	out.HookSpecificOutput.HookEventName = event
	out.HookSpecificOutput.AdditionalContext = text
	b, _ := json.Marshal(out)
	return append(b, '\n')
}

// FitContext cuts text at a line so that it and cutNote fit MaxContextChars.
func FitContext(text string) string {
	text = strings.TrimSpace(text)
	if contextLen(text) <= MaxContextChars {
		return text
	}
	budget := MaxContextChars - contextLen(cutNote) - 1
	var b strings.Builder
	used := 0
	for _, line := range strings.Split(text, "\n") {
		n := contextLen(line) + 1
		if used+n > budget {
			if used == 0 {
				// One long first line: cut it at a character.
				for _, r := range line {
					if used+utf16.RuneLen(r) > budget {
						break
					}
					b.WriteRune(r)
					used += utf16.RuneLen(r)
				}
				b.WriteByte('\n')
			}
			break
		}
		b.WriteString(line)
		b.WriteByte('\n')
		used += n
	}
	return b.String() + cutNote
}

// contextLen counts s in UTF-16 code units.
func contextLen(s string) int {
	n := 0
	for _, r := range s {
		if r == utf8.RuneError {
			n++
			continue
		}
		n += utf16.RuneLen(r)
	}
	return n
}

// BootstrapItem is one line of memory_bootstrap.
type BootstrapItem struct {
	ID     string `json:"id"`
	Type   string `json:"type"`
	Title  string `json:"title"`
	Reason string `json:"reason"`
	// Namespace and Anchors, when the server sends them with an item, spare
	// session-start a memory_get before it checks path anchors.
	Namespace string   `json:"namespace,omitempty"`
	Anchors   []Anchor `json:"anchors,omitempty"`
}

// Bootstrap is memory_bootstrap's result.
type Bootstrap struct {
	Namespace string          `json:"namespace"`
	Items     []BootstrapItem `json:"items"`
	LeftOut   int             `json:"left_out"`
	LeftOff   *LeftOff        `json:"left_off,omitempty"`
}

// LeftOff is what the repository's last captured session touched and left
// failing (docs/capture.md).
type LeftOff struct {
	SessionID   string    `json:"session_id"`
	Harness     string    `json:"harness"`
	LastAt      time.Time `json:"last_at"`
	Touched     []string  `json:"touched"`
	MoreTouched int       `json:"more_touched"`
	Failing     []string  `json:"failing"`
}

// leftOffText is the packet's "where we left off" as a few lines.
func leftOffText(lo *LeftOff) string {
	if lo == nil || len(lo.Touched)+len(lo.Failing) == 0 {
		return ""
	}
	var s strings.Builder
	who := lo.Harness
	if who == "" {
		who = "another session"
	}
	when := ""
	if !lo.LastAt.IsZero() {
		when = ", last active " + lo.LastAt.UTC().Format("2006-01-02 15:04 UTC")
	}
	fmt.Fprintf(&s, "Where we left off (the last captured session on this repository, %s%s):\n", who, when)
	if len(lo.Touched) > 0 {
		more := ""
		if lo.MoreTouched > 0 {
			more = fmt.Sprintf(" and %d more", lo.MoreTouched)
		}
		fmt.Fprintf(&s, "- touched: %s%s\n", strings.Join(lo.Touched, ", "), more)
	}
	for _, f := range lo.Failing {
		fmt.Fprintf(&s, "- left failing: %s\n", oneLine(f))
	}
	return s.String()
}

// SessionStartText is the context session-start injects: the repository's
// bootstrap items, then where the last captured session left off.
func SessionStartText(b *Bootstrap) string {
	var s strings.Builder
	if b != nil {
		if len(b.Items) == 0 {
			fmt.Fprintf(&s, "Hearth memory for %s: nothing stored yet.\n", b.Namespace)
		} else {
			fmt.Fprintf(&s, "Hearth memory for %s (shared by every agent on this repository; full records by id with memory_get):\n", b.Namespace)
			for _, it := range b.Items {
				fmt.Fprintf(&s, "- %s: %s [%s]%s\n", it.Type, oneLine(it.Title), it.ID, reasonNote(it.Reason))
			}
			if b.LeftOut > 0 {
				fmt.Fprintf(&s, "%d more not listed here; memory_search finds them.\n", b.LeftOut)
			}
		}
	}
	if b != nil {
		s.WriteString(leftOffText(b.LeftOff))
	}
	return s.String()
}

func reasonNote(reason string) string {
	switch reason {
	case "candidate":
		return " (candidate, awaiting review)"
	case "anchor-unavailable":
		return " (what it depends on is unavailable)"
	}
	return ""
}

// SearchHit is one memory_search hit.
type SearchHit struct {
	ID        string   `json:"id"`
	Namespace string   `json:"namespace"`
	Type      string   `json:"type"`
	Title     string   `json:"title"`
	Snippet   string   `json:"snippet"`
	Cosine    *float64 `json:"cosine"`
}

// Search is memory_search's result.
type Search struct {
	Hits    []SearchHit `json:"hits"`
	Ranking string      `json:"ranking"`
}

// RecallText is the context prompt recall injects for hits; "" for none.
func RecallText(hits []SearchHit) string {
	if len(hits) == 0 {
		return ""
	}
	var s strings.Builder
	s.WriteString("Hearth memory that may bear on this prompt (full records by id with memory_get):\n")
	for _, h := range hits {
		fmt.Fprintf(&s, "- %s: %s [%s]", h.Type, oneLine(h.Title), h.ID)
		if sn := oneLine(h.Snippet); sn != "" {
			s.WriteString(" — " + sn)
		}
		s.WriteByte('\n')
	}
	return s.String()
}

// oneLine folds white space runs, newlines included, into single spaces.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

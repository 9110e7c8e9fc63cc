package hook

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf16"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// golden compares got with testdata/golden/name (rewritten with -update).
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	p := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.WriteFile(p, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run with -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s: got\n%s\nwant\n%s", name, got, want)
	}
}

func float(f float64) *float64 { return &f }

var (
	goldenBootstrap = &Bootstrap{
		Namespace: "github/acme/api",
		Items: []BootstrapItem{
			{ID: "01JC0000000000000000000001", Type: "constraint", Title: "Never log\ntokens", Reason: "durable"},
			{ID: "01JC0000000000000000000002", Type: "decision", Title: "Queue on SQLite", Reason: "anchor-unavailable"},
			{ID: "01JC0000000000000000000003", Type: "decision", Title: "Retry billing calls", Reason: "candidate"},
		},
		LeftOut: 2,
	}
	goldenHits = []SearchHit{
		{ID: "01JC0000000000000000000003", Type: "decision", Title: "Retry billing calls", Snippet: "Retry idempotent\n billing calls three times", Cosine: float(0.71)},
		{ID: "01JC0000000000000000000004", Type: "procedure", Title: "Release", Snippet: ""},
	}
)

// TestRender_Golden holds each harness's output shape for each event:
// Claude Code's hookSpecificOutput JSON, Codex's plain text.
func TestRender_Golden(t *testing.T) {
	t.Parallel()
	for _, h := range []Harness{ClaudeCode, Codex, GeminiCLI} {
		golden(t, string(h)+"-session-start.out", Render(h, EventSessionStart, SessionStartText(goldenBootstrap)))
		golden(t, string(h)+"-session-start-empty.out", Render(h, EventSessionStart, SessionStartText(&Bootstrap{Namespace: "local/notes"})))
		golden(t, string(h)+"-prompt.out", Render(h, EventPrompt, RecallText(goldenHits)))
		if out := Render(h, EventPrompt, RecallText(nil)); out != nil {
			t.Errorf("%s: no hits rendered %q, want nothing", h, out)
		}
	}
}

// TestRender_Shapes checks the shapes as each harness parses them: Claude
// Code's JSON has exactly hookSpecificOutput{hookEventName,
// additionalContext}; Codex's text never starts like JSON (Codex would then
// parse it against its schema and fail it).
func TestRender_Shapes(t *testing.T) {
	t.Parallel()
	text := SessionStartText(goldenBootstrap)
	var cc map[string]map[string]string
	dec := json.NewDecoder(bytes.NewReader(Render(ClaudeCode, EventSessionStart, text)))
	if err := dec.Decode(&cc); err != nil {
		t.Fatal(err)
	}
	if len(cc) != 1 || len(cc["hookSpecificOutput"]) != 2 || cc["hookSpecificOutput"]["hookEventName"] != EventSessionStart ||
		cc["hookSpecificOutput"]["additionalContext"] != strings.TrimSpace(text) {
		t.Errorf("claude-code output = %v", cc)
	}
	// Gemini CLI: the same JSON, with its own event names (it shows plain
	// text to the user only).
	for event, want := range map[string]string{EventSessionStart: "SessionStart", EventPrompt: "BeforeAgent"} {
		var gm map[string]map[string]string
		if err := json.Unmarshal(Render(GeminiCLI, event, text), &gm); err != nil {
			t.Fatal(err)
		}
		if len(gm) != 1 || len(gm["hookSpecificOutput"]) != 2 || gm["hookSpecificOutput"]["hookEventName"] != want ||
			gm["hookSpecificOutput"]["additionalContext"] != strings.TrimSpace(text) {
			t.Errorf("gemini-cli %s output = %v", event, gm)
		}
	}
	cx := string(Render(Codex, EventSessionStart, text))
	if t0 := strings.TrimLeft(cx, " \t\r\n"); strings.HasPrefix(t0, "{") || strings.HasPrefix(t0, "[") {
		t.Errorf("codex output starts like JSON: %q", cx[:20])
	}
}

// TestFitContext_OK cuts at a line to the 10,000-character cap, counting
// UTF-16 code units as Claude Code does.
func TestFitContext_OK(t *testing.T) {
	t.Parallel()
	line := strings.Repeat("𝄞", 99) + "\n" // 198 UTF-16 units + newline
	long := strings.Repeat(line, 100)
	got := FitContext(long)
	if n := len(utf16.Encode([]rune(got))); n > MaxContextChars {
		t.Errorf("fitted context is %d UTF-16 units, want at most %d", n, MaxContextChars)
	}
	if !strings.HasSuffix(got, cutNote) || !strings.HasPrefix(got, line) {
		t.Errorf("fitted context does not keep whole lines and end with the note: ...%q", got[len(got)-80:])
	}
	one := FitContext(strings.Repeat("x", 3*MaxContextChars))
	if n := len([]rune(one)); n > MaxContextChars || !strings.HasSuffix(one, cutNote) {
		t.Errorf("one long line fitted to %d characters", n)
	}
	if got := FitContext("  short\n"); got != "short" {
		t.Errorf("FitContext(short) = %q", got)
	}
}

// TestParseInput_Harnesses reads the stdin each harness sends (captured from
// Claude Code 2.1.328, Codex 0.169.0 and Gemini CLI 0.61.0).
func TestParseInput_Harnesses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		file                      string
		session, cwd, src, prompt string
		transcript                bool
	}{
		{"claude-code-session-start.json", "cb2bc5d7-a3c6-4f36-a8e2-9f4681a1353a", "/home/ann/api", "startup", "", true},
		{"claude-code-prompt.json", "cb2bc5d7-a3c6-4f36-a8e2-9f4681a1353a", "/home/ann/api", "", "how do we retry billing calls?", true},
		{"claude-code-session-end.json", "cb2bc5d7-a3c6-4f36-a8e2-9f4681a1353a", "/home/ann/api", "", "", true},
		{"codex-session-start.json", "01a231fd-9b18-75c3-9eff-6873c45b1763", "/home/ann/api", "startup", "", true},
		{"codex-prompt.json", "01a231fd-9b18-75c3-9eff-6873c45b1763", "/home/ann/api", "", "how do we retry billing calls?", true},
		{"codex-session-end.json", "01a231fd-9b18-75c3-9eff-6873c45b1763", "/home/ann/api", "", "", false},
		{"gemini-cli-session-start.json", "4f0c2a8e-5d1b-4f7e-9a3c-2b6d8e1f0a97", "/home/ann/api", "startup", "", true},
		{"gemini-cli-prompt.json", "4f0c2a8e-5d1b-4f7e-9a3c-2b6d8e1f0a97", "/home/ann/api", "", "<hook_context>Hearth memory for github/acme/api: nothing stored yet.</hook_context>\n\nhow do we retry billing calls?", true},
		{"gemini-cli-session-end.json", "4f0c2a8e-5d1b-4f7e-9a3c-2b6d8e1f0a97", "/home/ann/api", "", "", true},
	} {
		t.Run(tc.file, func(t *testing.T) {
			f, err := os.Open(filepath.Join("testdata", "input", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			in, err := ReadInput(f)
			if err != nil {
				t.Fatal(err)
			}
			if in.SessionID != tc.session || in.Cwd != tc.cwd || in.Source != tc.src || in.Prompt != tc.prompt || (in.TranscriptPath != "") != tc.transcript {
				t.Errorf("got %+v", in)
			}
		})
	}
}

// TestParseInput_Err refuses input a hook cannot act on.
func TestParseInput_Err(t *testing.T) {
	t.Parallel()
	for name, in := range map[string]string{
		"NotJSON":        "hello",
		"Array":          `[{"session_id":"a"}]`,
		"NoSession":      `{"cwd":"/x"}`,
		"BlankSession":   `{"session_id":"  "}`,
		"ControlSession": `{"session_id":"a\u0007b"}`,
		"LongSession":    `{"session_id":"` + strings.Repeat("s", 129) + `"}`,
		"Null":           `null`,
	} {
		t.Run(name, func(t *testing.T) {
			if got, err := ParseInput([]byte(in)); err == nil {
				t.Errorf("ParseInput(%q) = %+v, want an error", in, got)
			}
		})
	}
	in, err := ParseInput([]byte(`{"session_id":"s","cwd":7,"prompt":null}`))
	if err != nil || in.Cwd != "" || in.Prompt != "" {
		t.Errorf("wrong-typed fields: %+v, %v; want them empty", in, err)
	}
	if _, err := ReadInput(strings.NewReader(`{"session_id":"s","prompt":"` + strings.Repeat("p", maxInputBytes) + `"}`)); err == nil {
		t.Error("an input over the limit was read")
	}
}

// FuzzParseInput: any stdin parses or fails without panicking, and what it
// accepts has a session id the server can keep.
func FuzzParseInput(f *testing.F) {
	for _, name := range []string{"claude-code-prompt.json", "codex-session-end.json", "opencode-prompt.json", "opencode-session-end.json", "gemini-cli-prompt.json", "gemini-cli-after-tool.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", "input", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"session_id":"x","prompt":"\ud800"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		in, err := ParseInput(data)
		if err != nil {
			return
		}
		if strings.TrimSpace(in.SessionID) == "" || len([]rune(in.SessionID)) > maxSessionIDChars {
			t.Fatalf("accepted session id %q", in.SessionID)
		}
	})
}

package hook

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestReadTranscriptTail reads both harnesses' transcripts: prompts and
// answers only, without tool calls, tool results, thinking, meta lines,
// harness notes or hook output.
func TestReadTranscriptTail(t *testing.T) {
	t.Parallel()
	t.Run("OKClaudeCode", func(t *testing.T) {
		turns, whole, err := ReadTranscriptTail(filepath.Join("testdata", "transcript", "claude-code.jsonl"))
		if err != nil || !whole {
			t.Fatalf("ReadTranscriptTail: %v, whole %v", err, whole)
		}
		want := []Turn{
			{"user", "Move the job queue to SQLite"},
			{"assistant", "I'll look at the queue first."},
			{"assistant", "Moved the job queue to SQLite: leases survive restarts and a failed job retries three times.\nDecided to keep one writer connection."},
		}
		if !reflect.DeepEqual(turns, want) {
			t.Errorf("got %q\nwant %q", turns, want)
		}
	})
	t.Run("OKCodex", func(t *testing.T) {
		turns, _, err := ReadTranscriptTail(filepath.Join("testdata", "transcript", "codex.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		want := []Turn{
			{"user", "Move the job queue to SQLite"},
			{"assistant", "Moved the job queue to SQLite: leases survive restarts."},
		}
		if !reflect.DeepEqual(turns, want) {
			t.Errorf("got %q\nwant %q", turns, want)
		}
	})
	t.Run("OKGeminiCLI", func(t *testing.T) {
		// The injected <hook_context> blocks and the tool call's turns are
		// not conversation.
		turns, _, err := ReadTranscriptTail(filepath.Join("testdata", "transcript", "gemini-cli.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		want := []Turn{
			{"user", "Move the job queue to SQLite"},
			{"assistant", "Moved the job queue to SQLite: leases survive restarts."},
		}
		if !reflect.DeepEqual(turns, want) {
			t.Errorf("got %q\nwant %q", turns, want)
		}
	})
	t.Run("OKTail", func(t *testing.T) {
		// A transcript larger than the tail: only its end is read, from the
		// first whole line.
		p := filepath.Join(t.TempDir(), "big.jsonl")
		old := `{"type":"user","message":{"role":"user","content":"old prompt ` + strings.Repeat("x", 200) + `"}}` + "\n"
		recent := `{"type":"user","message":{"role":"user","content":"recent prompt"}}` + "\n"
		data := strings.Repeat(old, transcriptTailBytes/len(old)+10) + recent
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		turns, whole, err := ReadTranscriptTail(p)
		if err != nil || whole {
			t.Fatalf("ReadTranscriptTail: %v, whole %v; want a tail", err, whole)
		}
		if last := turns[len(turns)-1]; last.Text != "recent prompt" {
			t.Errorf("last turn = %q", last.Text)
		}
		if len(turns) > transcriptTailBytes/len(old)+1 {
			t.Errorf("read %d turns: more than the tail holds", len(turns))
		}
	})
	t.Run("ErrMissing", func(t *testing.T) {
		if _, _, err := ReadTranscriptTail(filepath.Join(t.TempDir(), "none.jsonl")); err == nil {
			t.Error("a missing transcript read without error")
		}
	})
}

// TestSummaryAndNotes: the summary is the last answer, the notes the newest
// turns within the limit, oldest first.
func TestSummaryAndNotes(t *testing.T) {
	t.Parallel()
	turns := []Turn{{"user", "first"}, {"assistant", "one"}, {"user", "second"}, {"assistant", "two\nlines"}}
	summary, notes := SummaryAndNotes(turns)
	if summary != "two\nlines" {
		t.Errorf("summary = %q", summary)
	}
	if notes != "User: first\nAssistant: one\nUser: second\nAssistant: two\nlines" {
		t.Errorf("notes = %q", notes)
	}
	var many []Turn
	for i := 0; i < 100; i++ {
		many = append(many, Turn{"user", strings.Repeat("w ", 1000)})
	}
	many = append(many, Turn{"assistant", strings.Repeat("é", 3*MaxSummaryChars)})
	summary, notes = SummaryAndNotes(many)
	if n := len([]rune(summary)); n > MaxSummaryChars || !strings.HasSuffix(summary, "…") {
		t.Errorf("summary has %d characters, want at most %d, marked cut", n, MaxSummaryChars)
	}
	if len(notes) > MaxNotesBytes || !strings.HasSuffix(notes, "…") {
		t.Errorf("notes are %d bytes, want at most %d ending in the newest turn", len(notes), MaxNotesBytes)
	}
	if s, n := SummaryAndNotes(nil); s != "" || n != "" {
		t.Errorf("no turns: %q %q", s, n)
	}
}

// FuzzParseTranscript: any bytes parse without panicking, and turns carry
// text and a known role.
func FuzzParseTranscript(f *testing.F) {
	for _, name := range []string{"claude-code.jsonl", "codex.jsonl", "gemini-cli.jsonl"} {
		b, err := os.ReadFile(filepath.Join("testdata", "transcript", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, tr := range parseTranscript(data) {
			if tr.Text == "" || (tr.Role != "user" && tr.Role != "assistant") {
				t.Fatalf("turn %q", tr)
			}
		}
	})
}

package answers_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/hearth-memory/hearth/server/answers"
	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/screen"
)

// FuzzSplit feeds arbitrary record and model text to the sentence splitter
// and the cap: neither panics, sentences are trimmed and not empty, and a
// capped answer keeps at most MaxSentences within MaxChars.
func FuzzSplit(f *testing.F) {
	for _, s := range []string{
		"One. Two! Three? four", "Use e.g. the flag. Then go.", "- a\n- b\n\nVersion 1.2.3.", "", "...", "。！？",
		"\xff\xfe. x", strings.Repeat("word ", 200),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		parts := answers.Split(s)
		var sents []storage.NewSentence
		for _, p := range parts {
			if p == "" || strings.TrimSpace(p) != p {
				t.Fatalf("Split(%q) gave %q", s, p)
			}
			if txt, err := screen.Check("answer", p); err == nil {
				sents = append(sents, storage.NewSentence{Text: txt, SourceIDs: []string{"A"}})
			}
		}
		capped := answers.Cap(sents)
		n := 0
		for i, c := range capped {
			if i > 0 {
				n++
			}
			n += utf8.RuneCountInString(c.Text.String())
		}
		if len(capped) > answers.MaxSentences || (n > answers.MaxChars && utf8.ValidString(s)) {
			t.Fatalf("Cap kept %d sentences, %d characters", len(capped), n)
		}
	})
}

package capture

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestCutTitle checks the observation title's limit: maxTitle characters
// (not bytes), cut at a word when one ends past half of it, with an
// ellipsis. How events become records on a database is tested through
// storage's DB (storage/capture_test.go), which both engines run.
func TestCutTitle(t *testing.T) {
	t.Parallel()
	short := strings.Repeat("é", maxTitle)
	if got := cutTitle(short); got != short {
		t.Errorf("a title of %d characters was cut to %q", maxTitle, got)
	}
	words := strings.Repeat("word ", 40)
	got := cutTitle(words)
	if n := utf8.RuneCountInString(got); n > maxTitle || !strings.HasSuffix(got, "word…") {
		t.Errorf("cut to %d characters, %q; want at most %d ending at a word", n, got, maxTitle)
	}
	got = cutTitle(strings.Repeat("é", 3*maxTitle))
	if n := utf8.RuneCountInString(got); n != maxTitle || !strings.HasSuffix(got, "é…") {
		t.Errorf("one long word cut to %d characters; want %d ending in é…", n, maxTitle)
	}
}

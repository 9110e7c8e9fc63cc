package questions_test

import (
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/hearth-memory/hearth/storage/internal/questions"
)

// FuzzKey feeds arbitrary query text to the grouping key: it never
// panics, its words are distinct, sorted, lower-case letters and digits,
// and reordering the text's words does not change it.
func FuzzKey(f *testing.F) {
	for _, s := range []string{
		"How do we run the migrations?", "running migrations", "", "the of and", "ÉCOLE école ÉCOLES",
		"v1.2.3 go1.26 x86_64", "東京 タワー", "\x00\xff\xfe", "a b c d e f g h i j k l m n o p q r s t u v w x y z aa bb cc dd ee ff gg",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		key := questions.Key(s)
		if key == "" {
			return
		}
		words := strings.Split(key, " ")
		if !slices.IsSorted(words) || len(slices.Compact(slices.Clone(words))) != len(words) {
			t.Fatalf("key %q of %q: words not sorted and distinct", key, s)
		}
		for _, w := range words {
			if w == "" || strings.ContainsFunc(w, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
				t.Fatalf("key %q of %q: word %q", key, s, w)
			}
		}
		fields := strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
		if len(fields) > 32 {
			return // only the first 32 distinct words count: order decides which
		}
		slices.Reverse(fields)
		if got := questions.Key(strings.Join(fields, " ")); got != key {
			t.Fatalf("reversed %q: key %q, want %q", s, got, key)
		}
	})
}

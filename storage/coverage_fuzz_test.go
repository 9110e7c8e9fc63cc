package storage

import (
	"strings"
	"testing"
	"unicode"
)

// FuzzNamedForms: namedForms reads any prompt without panicking, and every
// word it names is a word of the prompt (split as fulltext.QueryWords
// splits, lower-cased) that the prompt writes with a capital.
func FuzzNamedForms(f *testing.F) {
	for _, s := range []string{"how do we shard the Kafka topics", "IPv6 plan. Thanks: GraphQL", "İstanbul ǅemal ΣΑΣ", "a\nB", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		words := map[string]bool{}
		for _, w := range strings.FieldsFunc(text, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
			if strings.ContainsFunc(w, unicode.IsUpper) {
				words[strings.ToLower(w)] = true
			}
		}
		for w, form := range namedForms(text) {
			if !words[w] || (form != nameInner && form != nameCapital) {
				t.Errorf("%q: named %q (%d), not a capitalised word of it", text, w, form)
			}
		}
	})
}

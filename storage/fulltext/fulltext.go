// Package fulltext is the word side of full-text search: the words of a
// query (runs of letters and digits, lower-cased, stopwords dropped), their
// Porter stems as the index's porter tokenizer makes them, the bigrams of
// Chinese, Japanese and Korean text and the tokenizer that indexes them,
// the synonyms the thesaurus adds to a query and the weights hearth_rank
// gives them, the snippet cut around a hit's matches, and the words
// pseudo-relevance feedback re-ranks hits by. It runs no SQL and knows no
// record: package storage, which runs the queries and ranks their matches,
// calls it.
package fulltext

import (
	"strings"
	"unicode"

	porterstemmer "github.com/blevesearch/go-porterstemmer"
)

// MaxQueryTerms caps the terms a search sends to FTS5: a pasted page should
// not turn into a thousand-way OR.
const MaxQueryTerms = 32

// QueryWords returns the distinct lower-cased words (runs of letters and
// digits) of natural-language text that are not stopwords, in order, at
// most MaxQueryTerms.
func QueryWords(text string) []string {
	var out []string
	seen := make(map[string]bool)
	for _, w := range strings.FieldsFunc(text, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		w = strings.ToLower(w)
		if stopwords[w] || seen[w] {
			continue
		}
		seen[w] = true
		out = append(out, w)
		if len(out) == MaxQueryTerms {
			break
		}
	}
	return out
}

// IsStopword reports whether w, a lower-case word, is a stopword: an
// English word too common to say what a question is about, which search
// drops.
func IsStopword(w string) bool { return stopwords[w] }

// stopwords are English words too common to say what a question is about.
// Negations (no, not, never) are kept: they matter in constraints.
var stopwords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`
		a about am an and any are as at be been being but by can could
		did do does doing don for from had has have having he her here his
		how i if in into is it its just me my of on or our ours she should
		so some such than that the their theirs them then there these they
		this those to us was we were what when where which while who whom
		whose why will with would you your yours s t ll re ve d m`) {
		stopwords[w] = true
	}
}

// Stem reduces a lower-case word to its Porter stem, leaving alone what the
// FTS5 porter tokenizer leaves alone: words under three letters and words
// holding anything but a-z.
func Stem(w string) string {
	if len(w) < 3 {
		return w
	}
	for i := 0; i < len(w); i++ {
		if w[i] < 'a' || w[i] > 'z' {
			return w
		}
	}
	return string(porterstemmer.StemWithoutLowerCasing([]rune(w)))
}

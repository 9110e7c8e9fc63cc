package fulltext

import (
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/hearth-memory/hearth/storage/thesaurus"
)

// Query expansion: Expand adds the synonyms of a query's words, from the
// thesaurus package, to the full-text query storage's Search sends, so
// that "invoice" finds a record that only says "bill". A synonym's match
// counts synonymWeight of what the same match of the user's own word would
// (hearth_rank multiplies its IDF), so a record holding the words asked for
// ranks above one holding only their synonyms. When no record holds the word it stands for, a
// synonym counts fully: there is no such record to rank above.
const (
	// synonymWeight is the rank weight of a synonym against 1 for a word of
	// the query, chosen on the eval set (docs/eval.md).
	synonymWeight = 0.5
	// maxSynonyms caps the synonyms one word or phrase of the query adds,
	// the group's first ones in the thesaurus's order.
	maxSynonyms = 3
)

// synonymIndex finds thesaurus groups by the query's words. Entries are
// matched by key: their words with stopwords dropped and the rest reduced
// to Porter stems (Stem, as the index's porter tokenizer reduces them),
// joined by spaces. So "invoices" finds the group of "invoice", and the
// query words "end", "day" (of "end of day") find the entry "end of day".
type synonymIndex struct {
	keys   map[string]int // entry key → group
	groups [][]synonym
	maxLen int // the most words of a key
}

// synonym is a thesaurus entry: its text, sent to FTS5 as a phrase, and its
// key.
type synonym struct{ text, key string }

var synonyms = sync.OnceValue(func() *synonymIndex { return newSynonymIndex(thesaurus.Groups()) })

// Warm builds the thesaurus's synonym index now, which the first Expand
// would otherwise build while its caller waits.
func Warm() { synonyms() }

// newSynonymIndex indexes groups by their entries' keys. An entry whose key
// an earlier group holds leads to that group only, and one with no key
// (only stopwords) is never matched; TestThesaurus_Keys keeps both out of
// the thesaurus.
func newSynonymIndex(groups [][]string) *synonymIndex {
	ix := &synonymIndex{keys: map[string]int{}}
	for _, g := range groups {
		var entries []synonym
		for _, e := range g {
			k := synonymKey(e)
			if k == "" {
				continue
			}
			if _, ok := ix.keys[k]; !ok {
				ix.keys[k] = len(ix.groups)
			}
			entries = append(entries, synonym{text: e, key: k})
			ix.maxLen = max(ix.maxLen, strings.Count(k, " ")+1)
		}
		ix.groups = append(ix.groups, entries)
	}
	return ix
}

// synonymKey is the key of a thesaurus entry: its words without stopwords,
// stemmed, joined by single spaces.
func synonymKey(entry string) string {
	var stems []string
	for _, w := range strings.Fields(entry) {
		if !stopwords[w] {
			stems = append(stems, Stem(w))
		}
	}
	return strings.Join(stems, " ")
}

// Expansion is a query's full-text terms: first the user's words, then the
// synonyms the thesaurus adds, each a word or a phrase of words; at most
// MaxQueryTerms in all.
type Expansion struct {
	terms  []string
	nWords int
	// of[i] lists, for the synonym terms[nWords+i], the indexes in terms of
	// the user's words it stands for.
	of [][]int
}

// Literal is the expansion of words (see QueryWords) without synonyms: the
// words alone.
func Literal(words []string) Expansion {
	return Expansion{terms: words, nWords: len(words)}
}

// Terms returns the terms of x, the user's words first (a phrase's words
// joined by spaces). The slice is x's: callers must not modify it.
func (x Expansion) Terms() []string { return x.terms }

// Words returns the user's words of x: its first terms, without synonyms.
func (x Expansion) Words() []string { return x.terms[:x.nWords] }

// Expand adds to words (see QueryWords) the synonyms of each word or run
// of words that is a thesaurus entry, matching the longest run first: at
// most maxSynonyms per match, none that the query already holds, taken in
// turns (every match's first synonym, then every second, …) until the
// query holds MaxQueryTerms terms.
func Expand(words []string) Expansion {
	x := Literal(words)
	ix := synonyms()
	stems := make([]string, len(words))
	have := map[string]bool{} // keys of the query's words and of the synonyms taken
	for i, w := range words {
		stems[i] = Stem(w)
		have[stems[i]] = true
	}
	type match struct {
		group      int
		from, n    int // the words matched: words[from:from+n]
		next, took int // the group's next entry to try; synonyms taken
	}
	var found []match
	for i := 0; i < len(words); {
		n := 1
		for l := min(ix.maxLen, len(words)-i); l >= 1; l-- {
			k := strings.Join(stems[i:i+l], " ")
			if g, ok := ix.keys[k]; ok {
				have[k] = true
				found = append(found, match{group: g, from: i, n: l})
				n = l
				break
			}
		}
		i += n
	}
	if len(found) == 0 {
		return x
	}
	x.terms = append(make([]string, 0, MaxQueryTerms), words...)
	for more := true; more && len(x.terms) < MaxQueryTerms; {
		more = false
		for i := range found {
			m := &found[i]
			entries := ix.groups[m.group]
			for m.next < len(entries) && have[entries[m.next].key] {
				m.next++
			}
			if m.took == maxSynonyms || m.next == len(entries) {
				continue
			}
			e := entries[m.next]
			have[e.key] = true
			x.terms = append(x.terms, e.text)
			of := make([]int, m.n)
			for j := range of {
				of[j] = m.from + j
			}
			x.of = append(x.of, of)
			m.next++
			m.took++
			more = true
			if len(x.terms) == MaxQueryTerms {
				break
			}
		}
	}
	return x
}

// RankWords is hearth_rank's words argument for the terms: one entry per
// term, space-separated, a phrase's words joined by "+"; a synonym's entry
// goes on with "^", its weight, "@" and the indexes of the words it stands
// for, joined by ",": "bill^0.5@0" (see ParseRankWord).
func (x Expansion) RankWords() string {
	var b strings.Builder
	for i, t := range x.terms {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strings.ReplaceAll(t, " ", "+"))
		if i < x.nWords {
			continue
		}
		b.WriteString("^" + strconv.FormatFloat(synonymWeight, 'g', -1, 64) + "@")
		for j, w := range x.of[i-x.nWords] {
			if j > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Itoa(w))
		}
	}
	return b.String()
}

// RankWord is an entry of hearth_rank's words argument: the word, the
// phrase's weight (1 for the user's words) and, for a synonym, the indexes
// of the scored phrases it stands for.
type RankWord struct {
	Word   string
	Weight float64
	Of     []int
}

// ParseRankWord reads an entry of RankWords: "bill^0.5@0" is the word
// "bill" weighing 0.5 for phrase 0. An entry without "^", or whose weight
// is not a positive number, weighs 1; indexes that are not numbers are
// left out.
func ParseRankWord(entry string) RankWord {
	w, rest, ok := strings.Cut(entry, "^")
	rw := RankWord{Word: w, Weight: 1}
	if !ok {
		return rw
	}
	weight, of, _ := strings.Cut(rest, "@")
	if f, err := strconv.ParseFloat(weight, 64); err == nil && f > 0 {
		rw.Weight = f
	}
	for _, s := range strings.Split(of, ",") {
		if i, err := strconv.Atoi(s); err == nil && i >= 0 {
			rw.Of = append(rw.Of, i)
		}
	}
	return rw
}

// Weigh returns the phrase's weight given dfs, the document frequencies of
// the scored phrases: 1 when no record holds one of the words it stands
// for, else its weight.
func (rw RankWord) Weigh(dfs []int64) float64 {
	for _, i := range rw.Of {
		if i < len(dfs) && dfs[i] == 0 {
			return 1
		}
	}
	return rw.Weight
}

// SnippetWords is the words a snippet looks for: the user's, then the
// synonyms' (a phrase's words each, stopwords aside), so that a record
// found by a synonym shows it.
func (x Expansion) SnippetWords() []string {
	if len(x.terms) == x.nWords {
		return x.terms
	}
	out := append([]string(nil), x.terms[:x.nWords]...)
	for _, t := range x.terms[x.nWords:] {
		for _, w := range strings.Fields(t) {
			if !stopwords[w] {
				out = append(out, w)
			}
		}
	}
	return out
}

// SynonymsOf returns the synonym terms x added for its i-th word (a
// phrase's words joined by spaces).
func (x Expansion) SynonymsOf(i int) []string {
	var out []string
	for j, of := range x.of {
		if slices.Contains(of, i) {
			out = append(out, x.terms[x.nWords+j])
		}
	}
	return out
}

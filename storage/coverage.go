package storage

import (
	"context"
	"math"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/hearth-memory/hearth/storage/fulltext"
)

// Coverage weighs how much of a query a record holds: each of the query's
// words (fulltext.QueryWords, by stem) weighs its inverse document
// frequency over the whole store, as bm25 weighs it, and a record's
// coverage is the share of that weight it holds in its title or content,
// a word counting as held when the record holds it or one of the synonyms
// search adds for it (fulltext.Expand; a phrase when it holds all its
// words). A word no record holds weighs most: a query about something
// memory never heard of is covered little by any record. The query's CJK
// text is weighed by its bigrams instead of its words (coverage_cjk.go).
// The relevance bar (docs/abstention.md) is a floor on it.
type Coverage struct {
	rows  int64
	words []string
	// alts[i] lists, for word i, the stems any one of which covers it:
	// its own, then each synonym's (a phrase's stems joined by spaces).
	alts  [][]string
	idf   []float64
	stems []string // every stem alts names, once
	total float64
	// named[i] says the text names word i (NamedWords).
	named []bool
	// cjk[i] says word i is a CJK term (coverage_cjk.go), held by a
	// record whose text holds it.
	cjk []bool
}

// QueryCoverage returns the weights of text's words. Call it after a
// search of the same text: the document frequencies are those that search
// counted (a cache per write generation).
func (db *DB) QueryCoverage(ctx context.Context, text string) (Coverage, error) {
	words := cjkQueryWords(fulltext.QueryWords(text))
	x := fulltext.Expand(words)
	rows, docFreq, err := db.coverageFreqs(ctx, words)
	if err != nil {
		return Coverage{}, err
	}
	c := Coverage{rows: rows}
	names := namedForms(text)
	seen := map[string]bool{}
	for i, w := range words {
		stem := fulltext.Stem(w)
		if seen[stem] {
			continue
		}
		seen[stem] = true
		var df int64
		if rows > 0 {
			var err error
			if df, err = docFreq(i); err != nil {
				return Coverage{}, err
			}
		}
		df, idf := weigh(df, rows)
		alts := []string{stem}
		for _, syn := range x.SynonymsOf(i) {
			var ss []string
			for _, sw := range strings.Fields(syn) {
				ss = append(ss, fulltext.Stem(sw))
			}
			alts = append(alts, strings.Join(ss, " "))
		}
		for _, a := range alts {
			for _, s := range strings.Fields(a) {
				if !slices.Contains(c.stems, s) {
					c.stems = append(c.stems, s)
				}
			}
		}
		c.words = append(c.words, w)
		c.alts = append(c.alts, alts)
		c.idf = append(c.idf, idf)
		c.total += idf
		c.named = append(c.named, names[w] == nameInner || names[w] == nameCapital && rows > 0 && df == 0)
		c.cjk = append(c.cjk, false)
	}
	terms := fulltext.CJKTerms(text)
	dfs := make([]int64, len(terms))
	if rows > 0 {
		if dfs, err = db.cjkFreqs(ctx, terms); err != nil {
			return Coverage{}, err
		}
	}
	for i, t := range terms {
		_, idf := weigh(dfs[i], rows)
		c.words = append(c.words, t)
		c.alts = append(c.alts, nil)
		c.idf = append(c.idf, idf)
		c.total += idf
		c.named = append(c.named, false)
		c.cjk = append(c.cjk, true)
	}
	return c, ctx.Err()
}

// weigh returns a word's document frequency df, bounded by rows, and its
// inverse document frequency over rows records (1 when rows is 0: no
// count), as bm25 weighs it and never 0.
func weigh(df, rows int64) (int64, float64) {
	if rows <= 0 {
		return 0, 1
	}
	df = min(max(df, 0), rows)
	idf := math.Log((float64(rows) - float64(df) + 0.5) / (float64(df) + 0.5))
	if idf <= 0 || math.IsNaN(idf) {
		idf = 1e-6
	}
	return df, idf
}

// coverageFreqs returns the index's row count and the document frequency
// of words[i] by i: on SQLite the rows the last ranked query saw and each
// word's index token (the stem hearth_rank learned, else its Porter stem)
// counted or cached per write generation, the rows counted when no ranked
// query has run yet; on PostgreSQL, records.fts's,
// as its search counts them (fts.PGIndex.WordFreqs).
func (db *DB) coverageFreqs(ctx context.Context, words []string) (int64, func(i int) (int64, error), error) {
	if db.pg == nil {
		rows := db.fts.RowsSeen()
		if rows == 0 {
			// No ranked query yet (a CJK-only search ranks no word).
			err := db.read(ctx, "coverage", func(tx *txn) (err error) {
				rows, err = db.fts.CountRows(ctx, tx)
				return classify("coverage", err)
			})
			if err != nil {
				return 0, nil, err
			}
		}
		return rows, func(i int) (int64, error) {
			token := fulltext.Stem(words[i])
			if t, ok := db.fts.Stem(words[i]); ok {
				token = t
			}
			return db.fts.DocFreq(token, rows)
		}, nil
	}
	var (
		rows int64
		dfs  []int64
	)
	err := db.read(ctx, "coverage", func(tx *txn) (err error) {
		rows, dfs, err = db.pgfts.WordFreqs(ctx, tx, words)
		return classify("coverage", err)
	})
	return rows, func(i int) (int64, error) { return dfs[i], nil }, err
}

// How a prompt writes a word (namedForms): with a capital letter after its
// first (GraphQL, IPv6, HSM), or capitalised where no sentence starts
// (Kafka in "shard the Kafka topics").
const (
	nameInner = 1 + iota
	nameCapital
)

// namedForms returns, by lower-case word, how text writes the words it
// writes as names (nameInner over nameCapital), split as
// fulltext.QueryWords splits them.
func namedForms(text string) map[string]int {
	out := map[string]int{}
	start := true // a sentence starts here
	word := -1    // byte offset of the word being read, or -1
	for i, r := range text + " " {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if word < 0 {
				word = i
			}
			continue
		}
		if word >= 0 {
			w := text[word:i]
			lw := strings.ToLower(w)
			first, size := utf8.DecodeRuneInString(w)
			switch {
			case strings.ContainsFunc(w[size:], unicode.IsUpper):
				out[lw] = nameInner
			case unicode.IsUpper(first) && !start && out[lw] == 0:
				out[lw] = nameCapital
			}
			word, start = -1, false
		}
		if strings.ContainsRune(".!?:\n", r) {
			start = true
		}
	}
	return out
}

// NamedWords returns the query's words the text writes as names that
// memory may not know: a capital after a word's first letter anywhere
// (GraphQL, IPv6, HSM), or a capitalised word where no sentence starts
// that no record holds (Kafka, when no record mentions it). A prompt about
// a named thing is answered only by a record that names it.
func (c Coverage) NamedWords() []string {
	var out []string
	for i, n := range c.named {
		if n {
			out = append(out, c.words[i])
		}
	}
	return out
}

// MinCoverageRecords is the smallest store whose document frequencies
// tell rare words from common ones: in a smaller one, nearly every word of
// a prompt is in no record and weighs the most, so coverage says little.
const MinCoverageRecords = 50

// Telling reports whether the store was large enough, when the weights
// were taken, for coverage to tell relevant records from others
// (MinCoverageRecords).
func (c Coverage) Telling() bool { return c.rows >= MinCoverageRecords }

// Of returns r's coverage, 0 to 1 (0 for a query without words), and the
// query words r holds, in query order.
func (c Coverage) Of(r *Record) (float64, []string) {
	if c.total == 0 {
		return 0, nil
	}
	held := fulltext.Holds(c.stems, r.Title, r.Content)
	has := func(s string) bool { return held[slices.Index(c.stems, s)] }
	sum := 0.0
	var words []string
	for i, alts := range c.alts {
		if c.cjk[i] && holdsCJK(c.words[i], r) || slices.ContainsFunc(alts, func(a string) bool {
			for _, s := range strings.Fields(a) {
				if !has(s) {
					return false
				}
			}
			return true
		}) {
			sum += c.idf[i]
			words = append(words, c.words[i])
		}
	}
	return sum / c.total, words
}

// Words returns how many words the query has, counted once per stem.
func (c Coverage) Words() int { return len(c.words) }

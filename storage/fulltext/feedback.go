package fulltext

import (
	"cmp"
	"math"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"
)

// Pseudo-relevance feedback: a question asked in other words than its
// answer's shares few words with it, but the best hits of a first ranking
// tend to be about the question's subject and to share its other words.
// Search, by Feedback, takes the words that the best feedbackDocs hits
// hold and that other hits read also hold, the feedbackTerms most telling
// of them, and re-ranks the hits it read by them, at a fraction
// (feedbackWeight) of the best hit's score. It reads only what Search has
// in hand for its hits, their titles and snippets (the passage around the
// query's words): no second query, and a fraction of the words of their
// contents to count, which cost a tenth of a search or more. On the eval
// set, titles and snippets find nearly as much as titles and contents
// (docs/eval.md).
const (
	// feedbackDocs is how many of the best hits give feedback words.
	feedbackDocs = 2
	// feedbackTerms is how many feedback words re-rank.
	feedbackTerms = 5
	// feedbackMinHits: a feedback word is held by at least this many of
	// the hits read, so that it says what the hits share, not what one
	// record alone says.
	feedbackMinHits = 2
	// feedbackWeight is what a hit holding every feedback word gains, as a
	// share of the best hit's score. The four settings were chosen on the
	// eval set (docs/eval.md), where most settings near them gained.
	feedbackWeight = 0.5
)

// Doc is a search hit as feedback reads it: its record's title, its
// snippet and its score, bm25 as the words' ranking gave it (lower is
// better).
type Doc struct {
	Title, Snippet string
	BM25           float64
}

// Feedback re-ranks docs, the hits of x's search, best first as the words'
// ranking gave them, by pseudo-relevance feedback: a doc's score (-BM25)
// gains feedbackWeight times the best doc's score times the share it holds
// of the feedback words (feedbackWords, each weighed, its count
// saturating), and the docs are sorted again, equal scores keeping their
// order. It sets each doc's BM25 to the score ranked by and returns the
// docs' indexes in their new order, best first. A query of one word is
// left as it is, and so are docs too few for another doc to give the best
// ones feedback: then Feedback returns nil, and docs are unchanged.
func Feedback(x Expansion, docs []Doc) []int {
	if x.nWords < 2 || len(docs) <= feedbackDocs {
		return nil
	}
	sc := feedbackScratches.Get().(*feedbackScratch)
	defer sc.release()
	words := feedbackWords(x, docs, sc)
	if len(words) == 0 {
		return nil
	}
	total := 0.0
	for _, w := range words {
		total += w.weight
	}
	best := -docs[0].BM25
	order := make([]int, len(docs))
	for i := range docs {
		share := 0.0
		for _, w := range words {
			if n := float64(w.tf[i]); n > 0 {
				share += w.weight * n / (n + 1)
			}
		}
		s := -docs[i].BM25 + feedbackWeight*best*share/total
		docs[i].BM25 = -s
		order[i] = i
	}
	// -BM25 is the score s exactly: negating a float is exact.
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(-docs[b].BM25, -docs[a].BM25) })
	return order
}

// feedbackScratch is the maps and slices of one feedback, kept between
// searches (feedbackScratches): a search allocates little else of its size.
type feedbackScratch struct {
	query map[string]bool // the stems of the query's words and synonyms
	stems map[string]int  // a best hit's stems, with their counts
	index map[string]int  // a candidate word's stem → its index in words
	seen  map[string]int  // a word of another hit, as written → its candidate, -1 for none
	words []feedbackWord
	tfs   []int // the candidates' counts, one block of len(docs) each
	heads stemHeads
}

var feedbackScratches = sync.Pool{New: func() any {
	return &feedbackScratch{query: map[string]bool{}, stems: map[string]int{}, index: map[string]int{}, seen: map[string]int{}}
}}

// release empties the scratch and puts it back for another search.
func (sc *feedbackScratch) release() {
	sc.reset()
	feedbackScratches.Put(sc)
}

func (sc *feedbackScratch) reset() {
	clear(sc.query)
	clear(sc.stems)
	clear(sc.index)
	clear(sc.seen)
	clear(sc.words)
	sc.words = sc.words[:0]
	sc.tfs = sc.tfs[:0]
	sc.heads.reset()
}

// countStems counts in stems a hit's words (its title's and snippet's) as
// feedback counts them: stems, stopwords and words shorter than three
// letters aside. It returns the number of words.
func countStems(doc Doc, stems map[string]int) int {
	size := 0
	for _, text := range []string{doc.Title, doc.Snippet} {
		eachWord(text, func(w string) {
			size++
			if s, ok := feedbackStem(w); ok {
				stems[s]++
			}
		})
	}
	return size
}

// feedbackWord is a word of feedback: its stem, its weight and its count in
// each hit.
type feedbackWord struct {
	stem   string
	weight float64
	tf     []int
}

// feedbackWords returns the feedback words of docs (best first, more than
// feedbackDocs of them): stems the best feedbackDocs hold that are not
// the query's words or their synonyms and that at least feedbackMinHits of
// the hits hold, weighed by their share of each best hit's words (the
// best first: 1, then 1/2) times their rarity among the hits, the
// feedbackTerms weightiest (equal weights by stem).
func feedbackWords(x Expansion, docs []Doc, sc *feedbackScratch) []feedbackWord {
	query, index, words, tfs := sc.query, sc.index, sc.words, sc.tfs
	defer func() { sc.words, sc.tfs = words, tfs }()
	for _, t := range x.terms {
		for _, w := range strings.Fields(t) {
			query[stemMemo.get(w)] = true
		}
	}
	for i := range feedbackDocs {
		clear(sc.stems)
		size := countStems(docs[i], sc.stems)
		for s, n := range sc.stems {
			if query[s] {
				continue
			}
			k, ok := index[s]
			if !ok {
				k = len(words)
				index[s] = k
				if len(tfs)+len(docs) > cap(tfs) {
					// The blocks taken keep the old array.
					tfs = make([]int, 0, max(64*len(docs), cap(tfs)*2))
				}
				tfs = tfs[:len(tfs)+len(docs)]
				tf := tfs[len(tfs)-len(docs):]
				clear(tf)
				words = append(words, feedbackWord{stem: s, tf: tf})
			}
			words[k].weight += float64(n) / float64(size) / float64(i+1)
			words[k].tf[i] = n
		}
	}
	if len(words) == 0 {
		return nil
	}
	// The other hits: only the candidate words are counted, and only the
	// words that may stem to one are stemmed.
	h, seen := &sc.heads, sc.seen
	for s := range index {
		h.add(s)
	}
	for i := feedbackDocs; i < len(docs); i++ {
		for _, text := range []string{docs[i].Title, docs[i].Snippet} {
			eachWord(text, func(w string) {
				// Most words are told by their letters alone, before
				// any lookup: too short to count, or not starting as a
				// candidate does.
				if len(w) < 3 || !h.mayStem(w) {
					return
				}
				k, ok := seen[w]
				if !ok {
					k = -1
					if s, ok := feedbackStem(w); ok {
						if c, ok := index[s]; ok {
							k = c
						}
					}
					seen[w] = k
				}
				if k >= 0 {
					words[k].tf[i]++
				}
			})
		}
	}
	n := float64(len(docs))
	kept := words[:0]
	for _, w := range words {
		df := 0
		for _, c := range w.tf {
			if c > 0 {
				df++
			}
		}
		if df < feedbackMinHits {
			continue
		}
		w.weight *= math.Log((n + 1) / (float64(df) + 0.5))
		kept = append(kept, w)
	}
	slices.SortFunc(kept, func(a, b feedbackWord) int {
		if c := cmp.Compare(b.weight, a.weight); c != 0 {
			return c
		}
		return strings.Compare(a.stem, b.stem)
	})
	return kept[:min(len(kept), feedbackTerms)]
}

// stemHeads tells, by its first letters, a word that cannot stem to one of
// a set of stems. Porter stemming rewrites a word's end only, and keeps all
// of the stem but its last letter as the lower-cased word's start
// (TestStem_KeepsAllButTheLastLetter): a stem of four letters or more
// starts the word with its first three, a shorter one with its first.
// Three letters are looked up in a bit set, not a map: most words of a hit
// are told apart by it alone.
type stemHeads struct {
	first [utf8.RuneSelf]bool // first letters of stems of two or three letters
	three [headBits / 64]uint64
	any   bool // a stem not told by its letters: every word may stem to it
}

// headBits is the size of stemHeads' set of three-letter heads: five bits
// of each ASCII byte, exact for letters (digits share bits with letters,
// which makes a word only more likely to be looked at).
const headBits = 1 << 15

// headBit is the bit of three lower-cased ASCII bytes.
func headBit(a, b, c byte) uint { return uint(a&31)<<10 | uint(b&31)<<5 | uint(c&31) }

func (h *stemHeads) reset() {
	clear(h.first[:])
	clear(h.three[:])
	h.any = false
}

func (h *stemHeads) add(stem string) {
	switch {
	case len(stem) < 2 || !isASCII(stem):
		h.any = true
	case len(stem) < 4:
		h.first[stem[0]] = true
	default:
		b := headBit(stem[0], stem[1], stem[2])
		h.three[b/64] |= 1 << (b % 64)
	}
}

// mayStem reports whether w (a word as written) may stem to a stem added.
func (h *stemHeads) mayStem(w string) bool {
	if h.any || len(w) < 3 {
		return true
	}
	var head [3]byte
	for i := range head {
		c := w[i]
		if c >= utf8.RuneSelf {
			return true
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		head[i] = c
	}
	b := headBit(head[0], head[1], head[2])
	return h.first[head[0]] || h.three[b/64]&(1<<(b%64)) != 0
}

// feedbackStem returns the stem of a word of a hit, false for a stopword or
// a word shorter than three letters. Stems are remembered (stemMemo): the
// hits of searches share most of their words, and stemming costs more than
// a lookup.
func feedbackStem(w string) (string, bool) {
	if len(w) < 3 {
		return "", false
	}
	w = strings.ToLower(w)
	if stopwords[w] {
		return "", false
	}
	return stemMemo.get(w), true
}

// stemMemo remembers the stems of words, as many as a StemCache holds.
var stemMemo = &memo{}

// memo stems words in Go (Stem), remembering each in a StemCache.
type memo struct{ c StemCache }

func (m *memo) get(w string) string {
	if s, ok := m.c.Get(w); ok {
		return s
	}
	s := Stem(w)
	m.c.Learn(strings.Clone(w), s)
	return s
}

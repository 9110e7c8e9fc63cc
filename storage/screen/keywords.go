package screen

import "strings"

// keywordSet finds which of a set of ASCII keywords occur in a text,
// ignoring ASCII case, in one pass: an Aho-Corasick automaton, over the
// keywords' first keyPrefix bytes, compiled to a dense transition table
// over the bytes that they use. A hit of a longer keyword's prefix is
// checked against the whole keyword. Keeping the automaton to prefixes
// keeps its table small enough to stay in cache.
type keywordSet struct {
	class [256]uint8 // byte → column; 0 for bytes that no keyword holds
	ncols int
	// next maps row + column to the next state's row (state*ncols); its
	// top bit is set when keywords end in that state.
	next     []uint16
	output   [][]int // state → ids of the keywords whose prefix ends there
	keywords []string
}

// hasOutput flags a transition into a state where keywords end.
const hasOutput = 1 << 15

// keyPrefix is how many bytes of each keyword the automaton holds.
const keyPrefix = 4

// newKeywordSet builds the automaton for lower-case ASCII keywords; id i is
// keywords[i]. An empty keyword never matches.
func newKeywordSet(keywords []string) *keywordSet {
	k := &keywordSet{ncols: 1, keywords: keywords}
	full := keywords
	keywords = make([]string, len(full))
	for i, w := range full {
		keywords[i] = w[:min(len(w), keyPrefix)]
	}
	for _, w := range full {
		if !isASCII(w) || strings.ToLower(w) != w {
			panic("screen: keyword not lower-case ASCII: " + w)
		}
	}
	for _, w := range keywords {
		for i := 0; i < len(w); i++ {
			c := w[i]
			if k.class[c] == 0 {
				k.class[c] = uint8(k.ncols)
				k.class[upper(c)] = uint8(k.ncols)
				k.ncols++
			}
		}
	}
	// The trie: goto_[state][column], 0 meaning no edge (state 0 is the
	// root, which no edge enters).
	goto_ := [][]int{make([]int, k.ncols)}
	k.output = [][]int{nil}
	for id, w := range keywords {
		if w == "" {
			continue
		}
		st := 0
		for i := 0; i < len(w); i++ {
			c := k.class[w[i]]
			if goto_[st][c] == 0 {
				goto_ = append(goto_, make([]int, k.ncols))
				k.output = append(k.output, nil)
				goto_[st][c] = len(goto_) - 1
			}
			st = goto_[st][c]
		}
		k.output[st] = append(k.output[st], id)
	}
	if len(goto_)*k.ncols > hasOutput {
		panic("screen: too many keyword states")
	}
	// Breadth first, each state's transitions are its trie edges, or else
	// those of its failure state (the longest proper suffix in the trie),
	// and its output adds its failure state's.
	next := make([]int, len(goto_)*k.ncols)
	fail := make([]int, len(goto_))
	queue := []int{}
	for c := 1; c < k.ncols; c++ {
		if s := goto_[0][c]; s != 0 {
			next[c] = s
			queue = append(queue, s)
		}
	}
	for len(queue) > 0 {
		st := queue[0]
		queue = queue[1:]
		k.output[st] = append(k.output[st], k.output[fail[st]]...)
		for c := 0; c < k.ncols; c++ {
			s := goto_[st][c]
			if s == 0 {
				next[st*k.ncols+c] = next[fail[st]*k.ncols+c]
				continue
			}
			fail[s] = next[fail[st]*k.ncols+c]
			next[st*k.ncols+c] = s
			queue = append(queue, s)
		}
	}
	k.next = make([]uint16, len(next))
	for i, s := range next {
		k.next[i] = uint16(s * k.ncols)
		if len(k.output[s]) > 0 {
			k.next[i] |= hasOutput
		}
	}
	return k
}

// scan calls found with the end offset and id of every keyword occurrence
// in s, in the order their first keyPrefix bytes end (so not always in
// the order of their starts or ends), and reports whether s is all ASCII.
func (k *keywordSet) scan(s string, found func(end, id int)) (ascii bool) {
	row, high := uint16(0), byte(0)
	next, class := k.next, &k.class
	for i := 0; i < len(s); i++ {
		c := s[i]
		high |= c
		v := next[int(row)+int(class[c])]
		row = v &^ hasOutput
		if v&hasOutput == 0 {
			continue
		}
		for _, id := range k.output[int(row)/k.ncols] {
			w := k.keywords[id]
			start := i + 1 - min(len(w), keyPrefix)
			if len(w) <= keyPrefix || hasPrefixFold(s[start:], w) {
				found(start+len(w), id)
			}
		}
	}
	return high < 0x80
}

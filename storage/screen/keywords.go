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
	// The trie, one row of ncols entries a state: next[state*ncols+column]
	// is the state an edge leads to, 0 meaning no edge (state 0 is the
	// root, which no edge enters). One flat table keeps the build to a few
	// allocations: it runs in every process that screens (a hook too).
	most := 1 // states: at most one a byte of the prefixes, and the root
	for _, w := range keywords {
		most += len(w)
	}
	next := make([]uint16, k.ncols, most*k.ncols)
	k.output = make([][]int, 1, most)
	for id, w := range keywords {
		if w == "" {
			continue
		}
		st := 0
		for i := 0; i < len(w); i++ {
			e := st*k.ncols + int(k.class[w[i]])
			if next[e] == 0 {
				next[e] = uint16(len(k.output))
				next = next[:len(next)+k.ncols] // zero: within most's capacity
				k.output = append(k.output, nil)
			}
			st = int(next[e])
		}
		k.output[st] = append(k.output[st], id)
	}
	states := len(k.output)
	if states*k.ncols > hasOutput {
		panic("screen: too many keyword states")
	}
	// Breadth first, each state's missing edges are those of its failure
	// state (the longest proper suffix in the trie), and its output adds
	// its failure state's.
	fail := make([]int, states)
	queue := make([]int, 0, states)
	for c := 1; c < k.ncols; c++ {
		if s := next[c]; s != 0 {
			queue = append(queue, int(s))
		}
	}
	for h := 0; h < len(queue); h++ {
		st := queue[h]
		if f := k.output[fail[st]]; len(f) > 0 {
			k.output[st] = append(k.output[st], f...)
		}
		row, frow := next[st*k.ncols:(st+1)*k.ncols], next[fail[st]*k.ncols:]
		for c, s := range row {
			if s == 0 {
				row[c] = frow[c]
				continue
			}
			fail[s] = int(frow[c])
			queue = append(queue, int(s))
		}
	}
	// In place, a state becomes its row's offset, flagged when keywords
	// end there.
	for i, s := range next {
		flag := uint16(0)
		if len(k.output[s]) > 0 {
			flag = hasOutput
		}
		next[i] = s*uint16(k.ncols) | flag
	}
	k.next = next
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

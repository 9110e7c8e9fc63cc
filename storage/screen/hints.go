package screen

import (
	"maps"
	"slices"
	"strings"
)

// A hint is a keyword occurrence that a finder starts from: the offset
// just past it and the keyword's id.
type hint struct{ end, id int }

// hints is one automaton over every keyword a finder needs: the literal
// prefixes of the reFind expressions, the keywords of the upstream rules
// (which decide whether a rule runs at all), the command names of cli.go,
// the credential stems of prose.go and the words that start a .netrc
// entry. newText runs it once per value, ignoring case (a finder that
// needs the case checks it itself).
var hints struct {
	keys    *keywordSet
	words   []string
	lits    []uint64 // keyword id → bits of the literals it is
	rules   [][]int  // keyword id → upstream rules it starts
	command []bool   // keyword id → is a command name of cliNameList
	stem    []bool   // keyword id → is a stem of proseStems
	netrc   []bool   // keyword id → is machine or default
}

// netrcWords start a .netrc entry.
var netrcWords = []string{"machine", "default"}

// buildHints builds the automaton; prepare calls it once the rule table
// is built.
func buildHints(ruleKeywords map[string][]int) {
	ids := map[string]int{}
	id := func(w string) int {
		if i, ok := ids[w]; ok {
			return i
		}
		ids[w] = len(hints.words)
		hints.words = append(hints.words, w)
		hints.lits = append(hints.lits, 0)
		hints.rules = append(hints.rules, nil)
		hints.command = append(hints.command, false)
		hints.stem = append(hints.stem, false)
		hints.netrc = append(hints.netrc, false)
		return len(hints.words) - 1
	}
	if len(literals) > 64 {
		panic("screen: more than 64 literals")
	}
	for i, l := range literals {
		hints.lits[id(strings.ToLower(l))] |= 1 << i
	}
	for _, w := range slices.Sorted(maps.Keys(ruleKeywords)) {
		i := id(w)
		hints.rules[i] = append(hints.rules[i], ruleKeywords[w]...)
	}
	for _, w := range cliNameList {
		hints.command[id(w)] = true
	}
	for _, w := range proseStems {
		hints.stem[id(w)] = true
	}
	for _, w := range netrcWords {
		hints.netrc[id(w)] = true
	}
	hints.keys = newKeywordSet(hints.words)
}

// scanHints fills t's hints.
func (t *text) scanHints() {
	t.cli, t.prose, t.netrc = t.cliBuf[:0], t.proseBuf[:0], t.netrcBuf[:0]
	t.ascii = hints.keys.scan(t.s, func(end, id int) {
		t.lits |= hints.lits[id]
		for _, r := range hints.rules[id] {
			t.fired[r/64] |= 1 << (r % 64)
		}
		if hints.command[id] {
			t.cli = append(t.cli, hint{end, id})
		}
		if hints.stem[id] {
			t.prose = append(t.prose, end)
		}
		if hints.netrc[id] {
			t.netrc = append(t.netrc, hint{end, id})
		}
	})
	if !t.ascii && (strings.Contains(t.s, "\u212a") || strings.Contains(t.s, "\u0130")) {
		// gitleaks lower-cases with Unicode rules before it looks for a
		// rule's keywords. Only two runes lower-case to ASCII: the Kelvin
		// sign K to k, and İ to i and a combining dot. With either, look
		// again in the lower-cased value.
		hints.keys.scan(strings.ToLower(t.s), func(_, id int) {
			for _, r := range hints.rules[id] {
				t.fired[r/64] |= 1 << (r % 64)
			}
		})
	}
}

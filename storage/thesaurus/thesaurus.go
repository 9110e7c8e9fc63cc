// Package thesaurus holds a small, general thesaurus of software,
// operations and business vocabulary (synonyms.txt, embedded): groups of
// words and phrases that mean the same thing, such as "invoice, bill" or
// "k8s, kubernetes". Search uses it to add a query word's synonyms to the
// full-text query. The package knows nothing of stemming or search: it
// parses and checks the groups; package fulltext matches them.
package thesaurus

import (
	_ "embed"
	"fmt"
	"strings"
	"sync"
)

//go:embed synonyms.txt
var data string

// Groups returns the embedded synonym groups, in file order, each in its
// file order (most common entry first). The slices are shared: callers must
// not modify them. It panics if the embedded file does not parse, which its
// test rules out.
func Groups() [][]string { return groups() }

var groups = sync.OnceValue(func() [][]string {
	g, err := Parse(data)
	if err != nil {
		panic(err)
	}
	return g
})

// Parse reads synonym groups: one group per line, entries separated by
// commas; blank lines and lines starting with # are skipped. Every entry is
// lower-case ASCII letters and digits, in words separated by single spaces;
// a group holds at least two entries, none twice; no entry is in two
// groups, so each word leads to one group. It returns an error naming the
// line of the first entry or group that breaks a rule.
func Parse(text string) ([][]string, error) {
	var out [][]string
	seen := map[string]int{} // entry → line
	for n, line := range strings.Split(text, "\n") {
		n++
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		var group []string
		for _, e := range strings.Split(line, ",") {
			e = strings.TrimSpace(e)
			if err := checkEntry(e); err != nil {
				return nil, fmt.Errorf("thesaurus: line %d: %q %w", n, e, err)
			}
			if at, ok := seen[e]; ok {
				return nil, fmt.Errorf("thesaurus: line %d: %q is already on line %d", n, e, at)
			}
			seen[e] = n
			group = append(group, e)
		}
		if len(group) < 2 {
			return nil, fmt.Errorf("thesaurus: line %d: a group needs at least two entries", n)
		}
		out = append(out, group)
	}
	return out, nil
}

// checkEntry returns why e is not an entry: words of a-z and 0-9 separated
// by single spaces.
func checkEntry(e string) error {
	if e == "" {
		return fmt.Errorf("is empty")
	}
	for _, w := range strings.Split(e, " ") {
		if w == "" {
			return fmt.Errorf("has a space that does not separate two words")
		}
		for _, r := range w {
			if (r < 'a' || r > 'z') && (r < '0' || r > '9') {
				return fmt.Errorf("has %q: entries are lower-case letters and digits", r)
			}
		}
	}
	return nil
}

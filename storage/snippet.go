package storage

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// snippetWords is how many words a snippet shows, as FTS5's snippet() was
// asked for.
const snippetWords = 24

// snippetter cuts the snippet of a hit: the part of its content around the
// query's words. It works in Go on the record already read, so a search
// cuts snippets for the hits it returns only, without running the
// full-text match again per hit. Words match when their Porter stems do
// (stem, as the index's porter tokenizer matches them); a CJK run matches
// where it holds one of the query's CJK bigrams or characters.
type snippetter struct {
	stems map[string]bool
	cjk   []string
}

// newSnippetter prepares the snippets of a query with words (lower-cased,
// see queryWords) and CJK terms.
func newSnippetter(words []string, text string) *snippetter {
	s := &snippetter{stems: make(map[string]bool, len(words))}
	for _, w := range words {
		s.stems[stem(w)] = true
	}
	q := cjkQuery(text)
	for _, t := range strings.Split(q, " OR ") {
		if t = strings.Trim(t, `"`); t != "" {
			s.cjk = append(s.cjk, t)
		}
	}
	return s
}

// word is a run of letters and digits in the content, by byte offsets.
type word struct {
	start, end int
	match      bool
}

// cut returns the snippet of content: the window of snippetWords words
// holding the most distinct matches (then the most matches, then the
// earliest), from its first word to its last, with an ellipsis where
// content goes on.
func (s *snippetter) cut(content string) string {
	var words []word
	for i := 0; i < len(content); {
		r, size := utf8.DecodeRuneInString(content[i:])
		if !unicode.IsLetter(r) && !unicode.IsNumber(r) {
			i += size
			continue
		}
		j := i + size
		for j < len(content) {
			r, size := utf8.DecodeRuneInString(content[j:])
			if !unicode.IsLetter(r) && !unicode.IsNumber(r) {
				break
			}
			j += size
		}
		words = append(words, word{start: i, end: j, match: s.matches(content[i:j])})
		i = j
	}
	if len(words) == 0 {
		return ""
	}
	n := min(snippetWords, len(words))
	best, bestScore, bestLead := 0, -1, 0
	for from := 0; from+n <= len(words); from++ {
		distinct := map[string]bool{}
		matches, first := 0, -1
		for i, w := range words[from : from+n] {
			if w.match {
				matches++
				distinct[strings.ToLower(content[w.start:w.end])] = true
				if first < 0 {
					first = i
				}
			}
		}
		// Ties go to the window that shows a few words before its first
		// match, then to the earliest.
		lead := abs(first - snippetLead)
		if score := len(distinct)*1000 + matches; score > bestScore || (score == bestScore && first >= 0 && lead < bestLead) {
			best, bestScore, bestLead = from, score, lead
		}
	}
	out := content[words[best].start:words[best+n-1].end]
	if best > 0 {
		out = "…" + out
	}
	if best+n < len(words) {
		out += "…"
	}
	return out
}

// snippetLead is how many words a snippet shows before its first match,
// when it can.
const snippetLead = 4

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// matches reports whether a content word matches the query.
func (s *snippetter) matches(w string) bool {
	if s.stems[stem(strings.ToLower(w))] {
		return true
	}
	for _, t := range s.cjk {
		if strings.Contains(w, t) {
			return true
		}
	}
	return false
}

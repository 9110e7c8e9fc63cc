package fulltext

import (
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// snippetWords is how many words a snippet shows, as FTS5's snippet() was
// asked for.
const snippetWords = 24

// Snippetter cuts the snippet of a hit: the part of its content around the
// query's words. It works in Go on the record already read, so a search
// cuts snippets for the hits it returns only, without running the
// full-text match again per hit. Words match when their Porter stems do
// (Stem, as the index's porter tokenizer matches them); a CJK run matches
// where it holds one of the query's CJK bigrams or characters. A
// Snippetter serves one goroutine at a time.
type Snippetter struct {
	stems map[string]bool
	cjk   []string
	// initial marks the ASCII bytes a query stem starts with. Porter
	// stemming rewrites suffixes only, so a word's stem starts with the
	// word's own first letter (TestStem_KeepsTheFirstLetter): a content
	// word starting with another ASCII byte is no match, and is not
	// stemmed.
	initial [utf8.RuneSelf]bool
	// judged remembers whether a content word, as written, matched: the
	// hits of one search share most of their words.
	judged map[string]bool
	// Scratch reused by each cut: a snippetter serves one search at a time.
	words []word
	at    []int
	keys  map[string]int
	count []int
}

// snippetters keeps snippetters between searches: the words of a cut, and
// the words judged, grow to a search's size once, not on every search.
var snippetters = sync.Pool{New: func() any {
	return &Snippetter{stems: map[string]bool{}, judged: map[string]bool{}}
}}

// NewSnippetter prepares the snippets of a query with words (lower-cased,
// see QueryWords) and the CJK terms of its text (CJKQuery). The caller
// releases it when its search has cut its last snippet.
func NewSnippetter(words []string, text string) *Snippetter {
	s := snippetters.Get().(*Snippetter)
	for _, w := range words {
		st := Stem(w)
		s.stems[st] = true
		if st != "" && st[0] < utf8.RuneSelf {
			s.initial[st[0]] = true
		}
	}
	q := CJKQuery(text)
	for _, t := range strings.Split(q, " OR ") {
		if t = strings.Trim(t, `"`); t != "" {
			s.cjk = append(s.cjk, t)
		}
	}
	return s
}

// Release empties s of its query and puts it back for another search: s
// is not used again. The snippets it cut stay the caller's.
func (s *Snippetter) Release() {
	clear(s.stems)
	clear(s.judged)
	clear(s.keys)
	s.cjk = s.cjk[:0]
	s.initial = [utf8.RuneSelf]bool{}
	snippetters.Put(s)
}

// word is a run of letters and digits in the content, by byte offsets, and
// which of the content's distinct matched words it is (-1: no match).
type word struct {
	start, end int
	key        int
}

// Cut returns the snippet of content: the window of snippetWords words
// holding the most distinct matches (then the most matches, then the
// earliest), from its first word to its last, with an ellipsis where
// content goes on. Of windows that tie, the first one showing its first
// match nearest snippetLead words in wins. The window slides over the
// words once, keeping its counts as it goes.
func (s *Snippetter) Cut(content string) string {
	var (
		words = s.words[:0]
		keys  = s.keys   // a matched word, lower-cased → its key
		at    = s.at[:0] // indexes of the matched words, in order
	)
	clear(keys)
	defer func() { s.words, s.keys, s.at = words[:0], keys, at[:0] }()
	wordSpans(content, func(i, j int) {
		w := word{start: i, end: j, key: -1}
		if s.judge(content[i:j]) {
			lower := strings.ToLower(content[i:j])
			k, ok := keys[lower]
			if !ok {
				if keys == nil {
					keys = make(map[string]int)
				}
				k = len(keys)
				keys[lower] = k
			}
			w.key = k
			at = append(at, len(words))
		}
		words = append(words, w)
	})
	if len(words) == 0 {
		return ""
	}
	n := min(snippetWords, len(words))
	count := append(s.count[:0], make([]int, len(keys))...)
	s.count = count
	distinct, matches, next := 0, 0, 0 // next: the first entry of at in the window
	add := func(w word, d int) {
		if w.key < 0 {
			return
		}
		matches += d
		if count[w.key] == 0 {
			distinct++
		}
		count[w.key] += d
		if count[w.key] == 0 {
			distinct--
		}
	}
	for _, w := range words[:n] {
		add(w, 1)
	}
	best, bestScore, bestLead := 0, -1, 0
	for from := 0; ; from++ {
		for next < len(at) && at[next] < from {
			next++
		}
		first := -1
		if next < len(at) && at[next] < from+n {
			first = at[next] - from
		}
		// Ties go to the window that shows a few words before its first
		// match, then to the earliest.
		lead := abs(first - snippetLead)
		if score := distinct*1000 + matches; score > bestScore || (score == bestScore && first >= 0 && lead < bestLead) {
			best, bestScore, bestLead = from, score, lead
		}
		if from+n == len(words) {
			break
		}
		add(words[from], -1)
		add(words[from+n], 1)
	}
	return window(content, words[best].start, words[best+n-1].end, best > 0, best+n < len(words))
}

// window returns content[start:end], with an ellipsis before it when more
// words come before, and after it when more come after.
func window(content string, start, end int, before, after bool) string {
	out := content[start:end]
	if before {
		out = "…" + out
	}
	if after {
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

// wordSpans calls fn with the byte offsets of each word of text, a run of
// letters and digits (wordRune), in order.
func wordSpans(text string, fn func(start, end int)) {
	for i := 0; i < len(text); {
		// ASCII is judged here, without a call: most text is.
		if c := text[i]; c < utf8.RuneSelf && !asciiWord[c] {
			i++
			continue
		}
		ok, size := wordRune(text[i:])
		if !ok {
			i += size
			continue
		}
		j := i + size
		for j < len(text) {
			if c := text[j]; c < utf8.RuneSelf {
				if !asciiWord[c] {
					break
				}
				j++
				continue
			}
			ok, size := wordRune(text[j:])
			if !ok {
				break
			}
			j += size
		}
		fn(i, j)
		i = j
	}
}

// eachWord calls fn with each word of text, as written.
func eachWord(text string, fn func(string)) {
	wordSpans(text, func(i, j int) { fn(text[i:j]) })
}

// wordRune reports whether the rune s starts with is a letter or a number
// (part of a word), and its size; ASCII is judged without decoding.
func wordRune(s string) (bool, int) {
	if c := s[0]; c < utf8.RuneSelf {
		return asciiWord[c], 1
	}
	r, size := utf8.DecodeRuneInString(s)
	return unicode.IsLetter(r) || unicode.IsNumber(r), size
}

// asciiWord marks the ASCII letters and digits.
var asciiWord = func() (t [utf8.RuneSelf]bool) {
	for c := range utf8.RuneSelf {
		t[c] = unicode.IsLetter(rune(c)) || unicode.IsNumber(rune(c))
	}
	return t
}()

// judge reports whether a content word (never empty) matches the query:
// at once for most words, which no query stem could start (noMatch), and
// else by matches, remembered per word as written.
func (s *Snippetter) judge(w string) bool {
	if s.noMatch(w) {
		return false
	}
	m, ok := s.judged[w]
	if !ok {
		m = s.matches(w)
		s.judged[w] = m
	}
	return m
}

// noMatch reports a word starting in ASCII that cannot match: its stem
// starts with its own first letter, which no query stem starts with, and no
// CJK term is inside it unless it goes on past ASCII.
func (s *Snippetter) noMatch(w string) bool {
	c := w[0]
	if c >= utf8.RuneSelf {
		return false
	}
	if 'A' <= c && c <= 'Z' {
		c += 'a' - 'A'
	}
	return !s.initial[c] && (len(s.cjk) == 0 || isASCII(w))
}

// matches reports whether a content word (never empty) matches the query.
func (s *Snippetter) matches(w string) bool {
	if s.noMatch(w) {
		return false
	}
	if s.stems[Stem(strings.ToLower(w))] {
		return true
	}
	for _, t := range s.cjk {
		if strings.Contains(w, t) {
			return true
		}
	}
	return false
}

// isASCII reports whether s is ASCII only.
func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

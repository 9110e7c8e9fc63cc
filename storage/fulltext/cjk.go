package fulltext

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/ncruces/go-sqlite3/ext/fts5"
)

// CJKTokenizer is hearth_cjk, the tokenizer of records_cjk (migration
// 0008): each run of Chinese, Japanese or Korean characters becomes its
// overlapping bigrams, each at its own position, and each character a token
// colocated with the bigram that starts with it (the last character at a
// position of its own), so that a query of one character, or of any run
// quoted as a phrase, matches inside a sentence written without spaces.
// Everything else yields no token.
type CJKTokenizer struct{}

// IsCJK reports whether r is written without spaces between words: Han,
// Hiragana, Katakana or Hangul, punctuation aside.
func IsCJK(r rune) bool {
	if r < 0x2E80 {
		return false
	}
	return (unicode.Is(unicode.Han, r) || unicode.Is(unicode.Hiragana, r) ||
		unicode.Is(unicode.Katakana, r) || unicode.Is(unicode.Hangul, r)) && !unicode.IsPunct(r)
}

// Tokenize emits the tokens of text.
func (CJKTokenizer) Tokenize(_ fts5.TokenizeFlag, text, _ string, token fts5.TokenCallback) error {
	for i := 0; i < len(text); {
		// ASCII never starts a run: skip it a byte at a time.
		if text[i] < utf8.RuneSelf {
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(text[i:])
		if !IsCJK(r) {
			i += size
			continue
		}
		// The run's character offsets.
		var offs []int
		j := i
		for j < len(text) {
			r, size := utf8.DecodeRuneInString(text[j:])
			if !IsCJK(r) {
				break
			}
			offs = append(offs, j)
			j += size
		}
		offs = append(offs, j)
		n := len(offs) - 1
		for k := range n {
			if k+1 < n {
				if err := token(0, text[offs[k]:offs[k+2]], offs[k], offs[k+2]); err != nil {
					return err
				}
				if err := token(fts5.TOKEN_COLOCATED, text[offs[k]:offs[k+1]], offs[k], offs[k+1]); err != nil {
					return err
				}
				continue
			}
			if err := token(0, text[offs[k]:offs[k+1]], offs[k], offs[k+1]); err != nil {
				return err
			}
		}
		i = j
	}
	return nil
}

// CJKQuery turns the CJK runs of natural-language text into an FTS5 query
// for records_cjk: its CJKTerms, each quoted (a string, never FTS5 syntax:
// a run holds no quote), ORed — as words are ORed for records_fts, since
// the word boundaries of such a question are unknown: a record sharing
// more of its bigrams ranks higher. It returns "" when text has no CJK
// character.
func CJKQuery(text string) string {
	var b strings.Builder
	for i, term := range CJKTerms(text) {
		if i > 0 {
			b.WriteString(" OR ")
		}
		b.WriteString(`"` + term + `"`)
	}
	return b.String()
}

// CJKTerms returns the distinct bigrams of each CJK run of text (a
// one-character run itself), in order, at most MaxQueryTerms: the index
// tokens a search of text looks up in the CJK index. It returns nil when
// text has no CJK character.
func CJKTerms(text string) []string {
	var (
		terms []string
		seen  = map[string]bool{}
		run   []rune
	)
	add := func(term string) {
		if seen[term] || len(seen) == MaxQueryTerms {
			return
		}
		seen[term] = true
		terms = append(terms, term)
	}
	flush := func() {
		switch len(run) {
		case 0:
		case 1:
			add(string(run))
		default:
			for i := range len(run) - 1 {
				add(string(run[i : i+2]))
			}
		}
		run = run[:0]
	}
	for _, r := range text {
		if IsCJK(r) {
			run = append(run, r)
		} else {
			flush()
		}
	}
	flush()
	return terms
}

// HasCJK reports whether text holds a CJK character: whether the
// tokenizer gives it any token.
func HasCJK(text string) bool {
	for i := 0; i < len(text); {
		// A byte below 0xE2 is ASCII, continues a rune, or leads one below
		// U+2000: no CJK character starts there.
		if text[i] < 0xE2 {
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(text[i:])
		if IsCJK(r) {
			return true
		}
		i += size
	}
	return false
}

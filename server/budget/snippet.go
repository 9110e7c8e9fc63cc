package budget

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Ellipsis ends text that was cut short.
const Ellipsis = "…"

// MaxSnippetBytes bounds a search hit's snippet. Full-text snippets are about
// 24 words, but one "word" may be a long identifier or a URL: the bound
// keeps ten hits and their titles inside the search budget.
const MaxSnippetBytes = 200

// Shorten returns s when it is at most max bytes. Otherwise it cuts s at the
// last word boundary (white space) that leaves room for Ellipsis, drops the
// spaces before the cut and appends Ellipsis; a first word longer than that
// is cut at a character boundary. The result is never over max bytes: with
// max below the size of Ellipsis it is "".
func Shorten(s string, max int) string {
	if len(s) <= max {
		return s
	}
	room := max - len(Ellipsis)
	if room < 0 {
		return ""
	}
	cut := strings.LastIndexFunc(s[:room+1], unicode.IsSpace)
	head := ""
	if cut > 0 {
		head = strings.TrimRightFunc(s[:cut], unicode.IsSpace)
	}
	if head == "" {
		// No boundary (or only leading space): cut inside the first word,
		// at a character boundary.
		cut = room
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		head = s[:cut]
	}
	return head + Ellipsis
}

// Snippet tidies a search snippet for a hit: runs of white space (line
// breaks included) become one space, and it is Shortened to MaxSnippetBytes.
func Snippet(s string) string {
	if !tidy(s) {
		s = strings.Join(strings.Fields(s), " ")
	}
	return Shorten(s, MaxSnippetBytes)
}

// tidy reports whether s is as Snippet leaves it: no white space but single
// spaces between words. Most snippets are, and are then not copied.
func tidy(s string) bool {
	space := true // a space here would lead s, or follow another
	for _, r := range s {
		switch {
		case r == ' ':
			if space {
				return false
			}
			space = true
		case unicode.IsSpace(r):
			return false
		default:
			space = false
		}
	}
	return !space || s == ""
}

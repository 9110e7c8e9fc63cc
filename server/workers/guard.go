package workers

import (
	"regexp"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// The duplicate guard of the nightly review (docs/design.md R-J2): a candidate may be
// forgotten as a duplicate only of a record that holds every number,
// version, path, identifier and quoted phrase of it. facts reads them out of
// text; missing lists those another text lacks. Both err on the side of
// seeing a fact: a word wrongly taken for one only makes the guard refuse,
// and the candidate stays for the agent's review.

// quoted finds quoted phrases of 1 to 200 characters on one line: "…",
// “…” and `…`. A longer "quote" is more likely two quotation marks far
// apart. singleQuoted finds '…'. Its 200-fold repetitions make a large
// program (300 KB), compiled on first use, not at package init
// (docs/capture.md).
var quoted = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile("\"([^\"\\n]{1,200})\"|\u201c([^\u201d\\n]{1,200})\u201d|`([^`\\n]{1,200})`")
})

// singleQuoted returns the phrases in '…' whose quotes stand apart from
// words, so that it's and don't open nothing: an opening quote at the
// start or after white space or ( [ {, a closing one at the end or before
// white space or punctuation, at most 200 characters apart on one line.
func singleQuoted(text string) []string {
	var out []string
	for i := 0; i < len(text); i++ {
		if text[i] != '\'' {
			continue
		}
		if i > 0 && !strings.ContainsRune(" \t\r\n([{", rune(text[i-1])) {
			continue
		}
		rest := text[i+1:]
		end := strings.IndexAny(rest, "'\n")
		for end >= 0 && rest[end] == '\'' {
			after := rest[end+1:]
			if after == "" || strings.ContainsRune(" \t\r\n.,;:!?)]}", rune(after[0])) {
				break
			}
			next := strings.IndexAny(after, "'\n")
			if next < 0 {
				end = -1
				break
			}
			end += 1 + next
		}
		if end <= 0 || rest[end] != '\'' || utf8.RuneCountInString(rest[:end]) > 200 {
			continue
		}
		out = append(out, rest[:end])
		i += end + 1
	}
	return out
}

// facts returns what a duplicate of text must hold: its quoted phrases
// (whitespace collapsed) and its fact tokens, each once, in order. A fact
// token is a word (split at white space, surrounding punctuation trimmed)
// that holds a digit (numbers, versions, ids), one of / \ _ . : @ # = $ % ~
// or a hyphen, or a capital letter after a letter (SQLite, maxTokens, WAL):
// numbers, versions, paths and identifiers.
func facts(text string) (phrases, tokens []string) {
	add := func(g string) {
		if p := collapse(g); p != "" && !contains(phrases, p) {
			phrases = append(phrases, p)
		}
	}
	for _, m := range quoted().FindAllStringSubmatch(text, -1) {
		for _, g := range m[1:] {
			add(g)
		}
	}
	for _, g := range singleQuoted(text) {
		add(g)
	}
	for _, w := range words(text) {
		if isFact(w) && !contains(tokens, w) {
			tokens = append(tokens, w)
		}
	}
	return phrases, tokens
}

// missing returns the facts of text (facts) that other does not hold: a
// phrase must appear in other (whitespace collapsed) between word
// boundaries, a token must be one of other's words. Comparison is exact,
// case included.
func missing(text, other string) []string {
	phrases, tokens := facts(text)
	if len(phrases)+len(tokens) == 0 {
		return nil
	}
	flat := collapse(other)
	have := map[string]bool{}
	for _, w := range words(other) {
		have[w] = true
	}
	var out []string
	for _, p := range phrases {
		if !containsPhrase(flat, p) {
			out = append(out, `"`+p+`"`)
		}
	}
	for _, t := range tokens {
		if !have[t] {
			out = append(out, t)
		}
	}
	return out
}

// words splits text at white space and trims each word of the punctuation
// around it; empty words are dropped.
func words(text string) []string {
	var out []string
	for _, f := range strings.FieldsFunc(text, unicode.IsSpace) {
		w := strings.TrimLeftFunc(f, leadingPunct)
		w = strings.TrimRightFunc(w, trailingPunct)
		if w != "" {
			out = append(out, w)
		}
	}
	return out
}

// leadingPunct is what opens a word without being part of it. A leading
// . / ~ - stays: ./x, /etc, ~/.ssh and --flag are paths and identifiers.
func leadingPunct(r rune) bool {
	return strings.ContainsRune("\"'`([{<*\u201c\u2018\u00ab", r)
}

// trailingPunct is what closes a word or a sentence after it.
func trailingPunct(r rune) bool {
	return strings.ContainsRune("\"'`)]}>*,;:!?.\u201d\u2019\u00bb\u2026", r)
}

// isFact reports whether w is a fact token (see facts).
func isFact(w string) bool {
	letter := false
	for _, r := range w {
		switch {
		case unicode.IsDigit(r), strings.ContainsRune(`/\_.:@#=$%~`, r):
			return true
		case r == '-' && len(w) > 1:
			return true
		case unicode.IsUpper(r) && letter:
			return true
		}
		letter = letter || unicode.IsLetter(r)
	}
	return false
}

// collapse joins s's words with single spaces.
func collapse(s string) string { return strings.Join(strings.Fields(s), " ") }

// containsPhrase reports whether p occurs in s with no letter or digit
// joined to either end of it (where p itself ends in one).
func containsPhrase(s, p string) bool {
	for off := 0; ; {
		i := strings.Index(s[off:], p)
		if i < 0 {
			return false
		}
		i += off
		j := i + len(p)
		before, _ := utf8.DecodeLastRuneInString(s[:i])
		after, _ := utf8.DecodeRuneInString(s[j:])
		first, _ := utf8.DecodeRuneInString(p)
		last, _ := utf8.DecodeLastRuneInString(p)
		if (i == 0 || !wordRune(first) || !wordRune(before)) && (j == len(s) || !wordRune(last) || !wordRune(after)) {
			return true
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		off = i + size
	}
}

func wordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' }

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

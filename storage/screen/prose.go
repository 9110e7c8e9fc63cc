package screen

import (
	"slices"
	"strings"
)

// proseLinks are the words that may stand between a credential word and
// its value: "the password is …", "set the token to …".
// (= and : are assignments, judged as code by credential-assignment.)
var proseLinks = map[string]bool{
	"is": true, "was": true, "are": true, "were": true, "to": true, "as": true,
	"now": true, "be": true, "becomes": true, "became": true,
}

// proseSkips are the words that may stand between a credential word and a
// link: "the password for the admin is …", "the key of our prod db is …".
// Up to two words after for, of or on are skipped too.
var proseSkips = map[string]bool{
	"for": true, "of": true, "on": true, "the": true, "a": true, "an": true,
	"our": true, "my": true, "this": true, "that": true, "its": true, "it": true,
}

// maxProseWords bounds how many words after a credential word are read.
const maxProseWords = 8

// findProse finds a secret stated in prose: a credential word (password,
// secret, token, API key… as credentialName reads them, or SQL's
// IDENTIFIED BY) followed by a blank and, closely, a value that reads as
// a key rather than a word: the next word ("use password Xq7!… for the
// admin"), or the word after a link, with only a few filler words before
// it ("the prod secret key is 9dK2v…", "the password for admin is …").
// The value must pass realValue, so words, numbers and placeholders
// ("the password is required", "token budget 4000") pass.
func findProse(t *text) (int, int) {
	s := t.s
	slices.Sort(t.prose)
	seen := 0 // words before this offset were judged
	for _, e := range t.prose {
		if e <= seen {
			continue
		}
		// The word of letters around the stem.
		w, i := e-1, e
		for w > 0 && isAlpha(s[w-1]) {
			w--
		}
		for i < len(s) && isAlpha(s[i]) {
			i++
		}
		seen = i
		if i-w > 16 || w > 0 && (isDigit(s[w-1]) || s[w-1] == '_' || s[w-1] == '-' || s[w-1] == '.' || s[w-1] == '$') {
			continue // part of a name in code
		}
		if i >= len(s) || s[i] != ' ' && s[i] != '\t' {
			continue // password: … and password=… are assignments
		}
		if !proseCredential(s, w, s[w:i]) {
			continue
		}
		if start, end := proseValue(s, i); start >= 0 {
			return start, end
		}
	}
	return -1, -1
}

// proseStems are the stems of the credential words of prose (see
// credentialName), and IDENTIFIED BY. They are hints (hints.go).
var proseStems = []string{"pass", "pw", "secret", "token", "key", "cred", "authorization", "identified by"}

// proseCredential reports whether word, at s[w:], is a credential word in
// prose, taking the word before it into account (API key, next token).
func proseCredential(s string, w int, word string) bool {
	if len(word) < 2 {
		return false
	}
	prev := ""
	if w >= 2 && s[w-1] == ' ' {
		p := w - 1
		for p > 0 && isAlpha(s[p-1]) && w-p <= maxWord {
			p--
		}
		prev = s[p : w-1]
	}
	if strings.EqualFold(word, "by") {
		return strings.EqualFold(prev, "identified")
	}
	var pb, hb, wb [maxWord]byte
	p, h, ok := lastWords(word, &pb, &hb)
	if !ok {
		return false
	}
	if len(p) == 0 && prev != "" && len(prev) <= maxWord {
		// One word: the word before it may qualify it (API key).
		for i := 0; i < len(prev); i++ {
			wb[i] = lower(prev[i])
		}
		p = wb[:len(prev)]
	}
	return credentialWords(p, h, false)
}

// proseValue finds the value of a credential word whose text continues at
// s[i:] with a blank.
func proseValue(s string, i int) (int, int) {
	var ws words
	ws.s = s
	for j := i; j < len(s) && ws.n < maxProseWords; {
		for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
			j++
		}
		if j == len(s) || s[j] == '\n' || s[j] == '\r' {
			break
		}
		ws.start[ws.n] = j
		for j < len(s) && !isBlank(s[j]) {
			j++
		}
		ws.end[ws.n] = j
		ws.n++
	}
	free := 0     // words still skipped after for, of or on
	link := false // the previous word is a link
	var buf [8]byte
	for k := 0; k < ws.n; k++ {
		word := ws.word(k)
		lw := lowerShort(word, &buf) // links and fillers are short
		if k == 0 || link {
			start, end, quoted, ok := trimProse(s, ws.start[k], ws.end[k])
			if ok && start < end && realValue(s[start:end], !quoted) {
				return start, end
			}
		}
		// "is:" links as "is" does, and so does a colon after a word that
		// may stand here: "the password for root: …".
		colon := strings.HasSuffix(lw, ":")
		lw = strings.TrimSuffix(lw, ":")
		link = proseLinks[lw]
		switch {
		case link:
			free = 0
		case lw == "for" || lw == "of" || lw == "on":
			free = 2
		case proseSkips[lw]:
		case free > 0:
			free--
		default:
			return -1, -1 // another subject: "the password file is …"
		}
		link = link || colon
		if strings.ContainsAny(word[len(word)-1:], ".!?;,") {
			return -1, -1 // the sentence or clause ends
		}
	}
	return -1, -1
}

// lowerShort returns word in lower case, written to buf, or "" when it is
// longer than buf: no link or filler is.
func lowerShort(word string, buf *[8]byte) string {
	if len(word) > len(buf) {
		return ""
	}
	for i := 0; i < len(word); i++ {
		buf[i] = lower(word[i])
	}
	return string(buf[:len(word)])
}

// trimProse drops enclosing quotes or brackets and trailing punctuation
// around a word of prose. ok is false for a word with quotes or brackets
// inside, which is code rather than a stated value.
func trimProse(s string, start, end int) (int, int, bool, bool) {
	for end > start && strings.IndexByte(".,;:", s[end-1]) >= 0 {
		end--
	}
	quoted := false
	if end-start >= 2 {
		switch c := s[start]; {
		case isQuote(c) && s[end-1] == c:
			start, end, quoted = start+1, end-1, true
		case c == '(' && s[end-1] == ')', c == '[' && s[end-1] == ']', c == '<' && s[end-1] == '>':
			start, end = start+1, end-1
		}
	}
	if strings.ContainsAny(s[start:end], "\"'`()[]{}<>") {
		return start, end, quoted, false
	}
	return start, end, quoted, true
}

package screen

import (
	"net/url"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// minSecret is the shortest value that can look real. Shorter values
// ("12", "true", "none", "hunter2") read as prose or settings.
const minSecret = 8

// realValue reports whether v, the value of a credential assignment or a URL
// password, looks like a real secret rather than a placeholder; see
// "Placeholders" in docs/screen.md. code is set for unquoted values, which
// may be code (cfg.Password, os.Getenv("X")) rather than literals.
func realValue(v string, code bool) bool {
	if strings.Contains(v, "%") {
		if u, err := url.PathUnescape(v); err == nil {
			v = u // ?token=%2A%2A%2A is ***
		}
	}
	if utf8.RuneCountInString(v) < minSecret {
		return false
	}
	if strings.IndexFunc(v, unicode.IsSpace) >= 0 {
		return false // prose: "rotate it every 90 days", also with U+2028 or a no-break space
	}
	if reference(v) || embeddedRefRE.MatchString(v) || !notDummy(v) {
		return false
	}
	if code && (v[0] == '(' || numberRE.MatchString(v) || codeRE.MatchString(v) && (strings.ContainsAny(v, ".([{") || strings.Contains(v, "->") || identifier(v))) {
		return false
	}
	if nameRE.MatchString(v) {
		return false
	}
	var letter, digit, symbol bool
	for _, r := range v {
		switch {
		case unicode.IsLetter(r):
			letter = true
		case unicode.IsDigit(r):
			digit = true
		case strings.ContainsRune("-_./:", r):
			// word separators: my-secret-name, db.password, a/b
		default:
			symbol = true
		}
	}
	return letter && digit || symbol && (letter || digit)
}

// codeRE matches an unquoted value that starts as code: an identifier path
// (cfg.DB.Password, self.token, env::var, this->key, *opts.Secret,
// &oauth2.Token) that ends there or continues as a call, index or composite
// literal.
var codeRE = regexp.MustCompile(`^[*&!]*[A-Za-z_$][\w$]*(?:(?:\.|::|->|\?\.)[A-Za-z_$][\w$]*)*(?:[(\[{]|$)`)

// identifier reports whether v, a bare identifier, reads as a name in code
// rather than a password: it has no digits (hashedPassword), or one number
// inside a name of two or more words (testRSA2048PrivateKey,
// test1024Key). A trailing number (Summer2024, MyPassword1) or digits
// scattered through it (Xk9mP2vQ) read as a password.
func identifier(v string) bool {
	first := strings.IndexAny(v, "0123456789")
	if first < 0 {
		return true
	}
	last := strings.LastIndexAny(v, "0123456789")
	if first == 0 || last == len(v)-1 || strings.Trim(v[first:last+1], "0123456789") != "" {
		return false
	}
	return len(splitWords(v)) >= 2
}

// numberRE matches an unquoted numeric literal: 0xc0506617, -0x3f87.
var numberRE = regexp.MustCompile(`^-?0[xXbBoO][0-9a-fA-F_]+$`)

// nameRE matches a kebab- or snake-case name of lower-case words, optionally
// numbered: client-valid-token-1, staging_db_v2.
var nameRE = regexp.MustCompile(`^[a-z]{2,}(?:[-_][a-z]{2,})+(?:[-_]v?[0-9]{1,4})?$`)

// refPrefixes name where a secret lives rather than the secret.
var refPrefixes = []string{"$", "{", "[", "<", "#{", "~/", "./", "../", "arn:", "urn:", "vault:", "op://", "env:", "file:"}

// embeddedRefRE matches a reference inside a value: hvs.<token>,
// prefix-${SUFFIX}, {{ .Values.x }}.
var embeddedRefRE = regexp.MustCompile(`<[A-Za-z][\w .-]*>|\$\{|\{\{`)

// pathRE matches an absolute path such as /run/secrets/db_password.
var pathRE = regexp.MustCompile(`^/[A-Za-z]{2,}/[\w./-]*$`)

// reference reports whether v refers to a secret instead of holding one:
// ${VAR}, $(cmd), {{ tmpl }}, <your-password>, [a, list], #{ruby}, %VAR%, a
// path, or a secret-manager reference.
func reference(v string) bool {
	for _, p := range refPrefixes {
		if strings.HasPrefix(v, p) {
			return true
		}
	}
	if len(v) > 2 && v[0] == '%' && v[len(v)-1] == '%' {
		return true
	}
	return pathRE.MatchString(v)
}

// dummyWords mark a placeholder in any case.
var dummyWords = []string{"example", "deadbeef", "changeme", "change_me", "change-me", "placeholder", "redacted", "dummy", "sample", "replace", "insert"}

// shortDummies mark a placeholder only in lower, UPPER or Title case, because
// four random letters would otherwise turn up in long real tokens too often.
var shortDummies = []string{"your", "YOUR", "Your", "fake", "FAKE", "Fake", "xxxx", "XXXX", "****", "...", "…", "1234", "abcd", "ABCD"}

// notDummy reports whether a value or token body is free of placeholder
// marks: dummy words, masks, ellipses and runs of six identical characters.
// It is the real-check for provider tokens.
func notDummy(v string) bool {
	for _, w := range shortDummies {
		if strings.Contains(v, w) {
			return false
		}
	}
	for _, w := range dummyWords {
		if indexFold(v, w) >= 0 {
			return false
		}
	}
	run := 1
	for i := 1; i < len(v); i++ {
		if v[i] == v[i-1] {
			if run++; run >= 6 {
				return false
			}
		} else {
			run = 1
		}
	}
	return true
}

// randomBody is the real-check for tokens whose prefix is also common in
// words: the body must mix letters and digits and be free of dummies.
func randomBody(v string) bool {
	return strings.ContainsAny(v, "0123456789") && strings.IndexFunc(v, func(r rune) bool { return r < utf8.RuneSelf && isAlpha(byte(r)) }) >= 0 && notDummy(v)
}

// mixedBody is randomBody for base62 tokens, which hold upper-case,
// lower-case and digits: sk-ecdsa-sha2-nistp256@openssh.com (an SSH key
// type) is not an OpenAI key.
func mixedBody(v string) bool {
	return randomBody(v) && strings.IndexFunc(v, func(r rune) bool { return r < utf8.RuneSelf && isUpper(byte(r)) }) >= 0 &&
		strings.IndexFunc(v, func(r rune) bool { return r < utf8.RuneSelf && isLower(byte(r)) }) >= 0
}

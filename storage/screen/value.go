package screen

import (
	"net/url"
	"slices"
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
	if reference(v) || embeddedRefRE().MatchString(v) || placeholder(v) {
		return false
	}
	if code && isCode(v, anyCode) {
		return false
	}
	if nameRE().MatchString(v) {
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

// strictValue reports whether v, a URL's password or the value of a
// credential-named assignment, is a real secret: anything but an obvious
// reference, mask or placeholder (see "Placeholders" in docs/screen.md).
// Unlike realValue it refuses letters-only and short values
// (NHFZxnwrngxqCx, correcthorsebatterystaple, hunter2). code is how an
// unquoted value outside a URL may read as code (isCode).
func strictValue(v string, code codeMode) bool {
	if strings.Contains(v, "%") {
		if u, err := url.PathUnescape(v); err == nil {
			v = u
		}
	}
	switch {
	case v == "":
		return false
	case strings.IndexFunc(v, unicode.IsSpace) >= 0:
		return false // prose: "see the vault", "rotate it every 90 days"
	case reference(v) || embeddedRefRE().MatchString(v) || placeholder(v) || nameRE().MatchString(v):
		return false
	case code != noCode && isCode(v, code):
		return false
	}
	return true
}

// codeMode says how far an unquoted value may read as code.
type codeMode int

const (
	// noCode: a literal (a URL's password, a quoted value).
	noCode codeMode = iota
	// exprCode: an expression, call or path, but no bare identifier: the
	// value of an environment-style key (DB_PASSWORD=…), a literal in a
	// shell or .env file.
	exprCode
	// shapedCode: also a bare identifier shaped like a name in code.
	shapedCode
	// anyCode: also any bare identifier (identifier), as realValue reads.
	anyCode
)

// isCode reports whether an unquoted value reads as code: a parenthesised
// expression, a 0x… number, or an identifier path, call, index or
// composite literal (cfg.Password, os.Getenv("X")), or, as mode allows, a
// bare identifier (identifier): with shapedCode it must also be shaped like
// a name in code (identShapeRE), so NHFZxnwrngxqCx or a 25-letter
// lower-case run is a password, not a variable.
func isCode(v string, mode codeMode) bool {
	if v[0] == '(' || numberRE().MatchString(v) {
		return true
	}
	if !codeRE().MatchString(v) {
		return false
	}
	if strings.ContainsAny(v, ".([{") || strings.Contains(v, "->") {
		return true
	}
	switch mode {
	case anyCode:
		return identifier(v)
	case shapedCode:
		return identifier(v) && identShapeRE().MatchString(v) && (strings.ContainsAny(v, "_ABCDEFGHIJKLMNOPQRSTUVWXYZ") || len(v) <= 16)
	}
	return false
}

// identShapeRE matches the shapes of names in code: lowerCamel (dbPass,
// testRSA2048PrivateKey), snake_case, UPPER_SNAKE and UpperCamel
// (DefaultToken).
var identShapeRE = lazyRegexp(`^(?:[a-z][a-z0-9]*(?:[A-Z]+[a-z0-9]*)*|[a-z][a-z0-9]*(?:_[a-z0-9]+)+|_?[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*|(?:[A-Z][a-z0-9]+)+)$`)

// placeholderWords are the words a whole placeholder value may be made of
// (see "Placeholders" in docs/screen.md): pass, secret, changeme, none,
// my_db_password, abcd1234.
var placeholderWords = map[string]bool{
	"example": true, "deadbeef": true, "changeme": true, "change": true, "me": true, "placeholder": true,
	"redacted": true, "dummy": true, "sample": true, "replace": true, "insert": true, "your": true,
	"fake": true, "abcd": true, "foo": true, "bar": true, "baz": true, "test": true, "tests": true,
	"testing": true, "xxx": true, "todo": true, "tbd": true, "here": true, "my": true, "some": true,
	"value": true, "new": true, "default": true, "hidden": true, "masked": true, "removed": true,
	"omitted": true, "unset": true, "none": true, "null": true, "nil": true, "undefined": true,
	"empty": true, "required": true, "optional": true, "true": true, "false": true, "string": true,
	"super": true, "top": true, "very": true, "please": true, "it": true, "this": true,
	"password": true, "passwd": true, "pass": true, "pw": true, "pwd": true, "passphrase": true,
	"secret": true, "token": true, "key": true, "api": true, "apikey": true, "access": true,
	"auth": true, "credential": true, "credentials": true, "user": true, "username": true,
	"admin": true, "root": true, "guest": true, "db": true, "database": true, "app": true,
	"client": true, "private": true, "postgres": true, "mysql": true,
}

// shortDummies mark a placeholder when one is a whole word of the value
// (fake-token-for-tests, HRKU-AA-your-key-here), never inside a word
// (Welcome1234!, Winter1234x).
var shortDummies = map[string]bool{"your": true, "fake": true, "abcd": true, "1234": true, "dummy": true, "sample": true}

// placeholder reports whether v is a placeholder by its marks (masked:
// masks, ellipses, runs; or AWS's upper-case EXAMPLE, as in its documented
// keys), holds a dummy word as a whole word (changeme-2024, not
// Example1234x), or
// is made only of placeholderWords and numbers (split at punctuation, case
// changes and between letters and digits: abcd1234, my_db_password,
// changeme-2024); a number inside a word must be typed, not chosen
// (admin123 is a placeholder, MyPassword1 is not).
func placeholder(v string) bool {
	if masked(v) || maskRE().MatchString(v) || strings.Contains(v, "EXAMPLE") {
		return true
	}
	dummy := false
	eachWord(v, func(start, end int) {
		w := strings.ToLower(v[start:end])
		if shortDummies[w] || slices.Contains(dummyWords, w) {
			dummy = true
		}
	})
	if dummy {
		return true
	}
	if strings.Trim(v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.") != "" {
		return false
	}
	words := 0
	ok := true
	eachWord(v, func(start, end int) {
		parts := splitDigits(v[start:end])
		for _, w := range parts {
			if isDigit(w[0]) {
				if len(parts) > 1 && !dummyNumber(w) {
					ok = false // MyPassword1, admin7: a password's number
				}
				continue // a number of its own is neutral: changeme-2024, KEY_1
			}
			words++
			if !placeholderRun(strings.ToLower(w)) {
				ok = false
			}
		}
	})
	return ok && words > 0
}

// maskRE matches a value made only of mask characters: ***, xxx, •••,
// ..., ###.
var maskRE = lazyRegexp(`^[*xX•.…#]+$`)

// placeholderRun reports whether w, a lower-case run of letters, is
// placeholderWords written together: mysecretpassword, supersecret,
// yourpassword; correcthorsebatterystaple is not.
func placeholderRun(w string) bool {
	if len(w) > maxValue {
		return false
	}
	var ends [maxValue + 1]bool // ends[i]: w[:i] splits into words
	ends[0] = true
	for i := 1; i <= len(w); i++ {
		for j := max(0, i-maxPlaceholderWord); j < i && !ends[i]; j++ {
			ends[i] = ends[j] && placeholderWords[w[j:i]]
		}
	}
	return ends[len(w)]
}

// maxPlaceholderWord is the longest of placeholderWords.
const maxPlaceholderWord = 12

// dummyNumber reports whether digits are typed rather than drawn: one
// digit repeated or counting up (000, 123, 1234).
func dummyNumber(d string) bool {
	for i := 1; i < len(d); i++ {
		if d[i] != d[i-1] && d[i] != d[i-1]+1 {
			return false
		}
	}
	return len(d) >= 3
}

// splitDigits splits a word between letters and digits: abcd1234 → abcd,
// 1234.
func splitDigits(w string) []string {
	var out []string
	start := 0
	for i := 1; i < len(w); i++ {
		if isDigit(w[i]) != isDigit(w[i-1]) {
			out = append(out, w[start:i])
			start = i
		}
	}
	return append(out, w[start:])
}

// codeRE matches an unquoted value that starts as code: an identifier path
// (cfg.DB.Password, self.token, env::var, this->key, *opts.Secret,
// &oauth2.Token) that ends there or continues as a call, index or composite
// literal.
var codeRE = lazyRegexp(`^[*&!]*[A-Za-z_$][\w$]*(?:(?:\.|::|->|\?\.)[A-Za-z_$][\w$]*)*(?:[(\[{]|$)`)

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
var numberRE = lazyRegexp(`^-?0[xXbBoO][0-9a-fA-F_]+$`)

// nameRE matches a kebab- or snake-case name of lower-case words, optionally
// numbered: client-valid-token-1, staging_db_v2.
var nameRE = lazyRegexp(`^[a-z]{2,}(?:[-_][a-z]{2,})+(?:[-_]v?[0-9]{1,4})?$`)

// refPrefixes name where a secret lives rather than the secret.
var refPrefixes = []string{"$", "{", "[", "<", "#{", "~/", "./", "../", "arn:", "urn:", "vault:", "op://", "env:", "file:"}

// embeddedRefRE matches a reference inside a value: hvs.<token>,
// prefix-${SUFFIX}, {{ .Values.x }}.
var embeddedRefRE = lazyRegexp(`<[A-Za-z][\w .-]*>|\$\{|\{\{`)

// pathRE matches an absolute path such as /run/secrets/db_password.
var pathRE = lazyRegexp(`^/[A-Za-z]{2,}/[\w./-]*$`)

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
	if len(v) > 1 && v[0] == '!' && isAlpha(v[1]) {
		return true // a YAML tag: !vault |, !Ref, !env_var
	}
	return pathRE().MatchString(v)
}

// dummyWords mark a placeholder in any case.
var dummyWords = []string{"example", "deadbeef", "changeme", "change_me", "change-me", "placeholder", "redacted", "dummy", "sample", "replace", "insert"}

// masks mark a masked token: xxxx, ****, an ellipsis.
var masks = []string{"xxxx", "XXXX", "****", "•••", "...", "…"}

// notDummy reports whether a token body is free of placeholder marks: the
// long dummy words (as in AWS's documented AKIAIOSFODNN7EXAMPLE), masks,
// ellipses and runs of six identical characters. It is the real-check for
// provider tokens. Short words (abcd, fake, 1234, your) turn up in real
// tokens and do not count.
func notDummy(v string) bool {
	for _, w := range dummyWords {
		if indexFold(v, w) >= 0 {
			return false
		}
	}
	return !masked(v)
}

// masked reports whether v holds a mask (xxxx, ****, •••), an ellipsis, or
// a run of six identical or consecutive characters (aaaaaa, 000000,
// 123456, abcdef): typed, not drawn.
func masked(v string) bool {
	for _, w := range masks {
		if strings.Contains(v, w) {
			return true
		}
	}
	run, seq := 1, 1
	for i := 1; i < len(v); i++ {
		if v[i] == v[i-1] {
			if run++; run >= 6 {
				return true
			}
		} else {
			run = 1
		}
		if v[i] == v[i-1]+1 && isAlnum(v[i]) {
			if seq++; seq >= 6 {
				return true
			}
		} else {
			seq = 1
		}
	}
	return false
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

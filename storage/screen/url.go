package screen

import (
	"net/url"
	"strings"
)

// maxAuthority bounds the look-ahead after "://".
const maxAuthority = 512

// findURLPassword finds scheme://user:pass@host in text and returns the span
// of pass unless it is an obvious reference or placeholder (strictValue).
func findURLPassword(s string) (int, int) {
	for i := 0; ; {
		j := strings.Index(s[i:], "://")
		if j < 0 {
			return -1, -1
		}
		p := i + j
		i = p + 3
		if p == 0 || !isAlpha(s[p-1]) && !isDigit(s[p-1]) && s[p-1] != '+' {
			continue // no scheme
		}
		a := p + 3
		e := a
		for e < len(s) && e-a < maxAuthority && !isAuthorityStop(s[e]) {
			e++
		}
		at := strings.LastIndexByte(s[a:e], '@')
		if at < 0 {
			continue
		}
		c := strings.IndexByte(s[a:a+at], ':')
		if c < 0 || strings.ContainsAny(s[a:a+c], "?#") {
			continue
		}
		// A password that repeats the user is a documented default
		// (guest:guest, postgres:postgres), not a secret.
		if start, end := a+c+1, a+at; s[start:end] != s[a:a+c] && strictValue(s[start:end], noCode) {
			return start, end
		}
	}
}

// isAuthorityStop ends the authority in text. ? and # don't: raw, they are
// common in pasted passwords (https://bob:Zq8#kLm2@host).
func isAuthorityStop(c byte) bool {
	switch c {
	case '/', ' ', '\t', '\r', '\n', '"', '\'', '`', '<', '>', '\\':
		return true
	}
	return false
}

// screenURL applies the R-S3 rules to the URL of a url: anchor and returns
// the pattern it breaks, or "". Any userinfo is refused, even without a
// password: an anchor is shared and re-checked by other clients, and has no
// use for a login. A query, fragment or ;path parameter whose name reads as
// a credential (credentialName with URL names) is refused whatever its
// value, so an empty or placeholder value is refused too.
func screenURL(u string) string {
	rest := strings.TrimSpace(u)
	if i := strings.Index(rest, "://"); i >= 0 {
		a := rest[i+3:]
		e := strings.IndexAny(a, "/?#")
		if e < 0 {
			e = len(a)
		}
		if strings.ContainsRune(a[:e], '@') {
			return patURLUserinfo
		}
		rest = a[e:]
	}
	frag := ""
	if i := strings.IndexByte(rest, '#'); i >= 0 {
		rest, frag = rest[:i], rest[i+1:]
	}
	path, query := rest, ""
	if i := strings.IndexByte(rest, '?'); i >= 0 {
		path, query = rest[:i], rest[i+1:]
	}
	// Matrix parameters in the path: /app;jsessionid=….
	for _, seg := range strings.Split(path, "/") {
		if _, params, ok := strings.Cut(seg, ";"); ok && credentialParam(params, true) {
			return patURLParam
		}
	}
	if credentialParam(query, false) {
		return patURLParam
	}
	// A fragment is a plain anchor (#section-2) unless it holds name=value
	// pairs, as in OAuth's #access_token=… or a route's #/cb?token=….
	if strings.ContainsRune(frag, '=') {
		if i := strings.LastIndexByte(frag, '?'); i >= 0 {
			frag = frag[i+1:]
		}
		if credentialParam(frag, true) {
			return patURLParam
		}
	}
	return ""
}

// credentialParam reports whether any parameter in a query-like list
// (a=1&b=2;c=3) is named as a credential. With pairsOnly, a part without =
// is not a parameter.
func credentialParam(list string, pairsOnly bool) bool {
	for _, part := range strings.FieldsFunc(list, func(r rune) bool { return r == '&' || r == ';' }) {
		name, _, ok := strings.Cut(part, "=")
		if !ok && pairsOnly {
			continue
		}
		if n, err := url.QueryUnescape(name); err == nil {
			name = n
		}
		if hasStem(name) && credentialName(name, true) {
			return true
		}
	}
	return false
}

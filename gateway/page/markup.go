package page

import (
	"bytes"
	"fmt"
	"strings"
)

// The page is written by Go code rather than html/template: executing a
// template calls methods by name through reflection, and a binary that can
// do that keeps every exported method of every type it converts to an
// interface, 4.4 MB of this one (docs/operations.md, "The binary with and
// without PostgreSQL"). The writer below escapes each value as
// html/template escaped it in the same place, so the page reads the same.

// markup is HTML the page wrote itself; the writer copies it unescaped.
type markup string

// href is a URL written into an href attribute: a scheme other than http,
// https or mailto makes it "#ZgotmplZ", bytes a URL may not hold are
// %-escaped, then it is escaped as any attribute value (html/template's
// urlFilter, urlNormalizer and attribute escaper).
type href string

// cssValue is a value written into a style attribute: one that could end
// the declaration or hold a script is "ZgotmplZ" (as html/template's
// cssValueFilter, stricter: it refuses a backslash rather than decode it).
type cssValue string

// filterFailsafe replaces a value that is unsafe where it would go, as
// html/template's does.
const filterFailsafe = "ZgotmplZ"

// htmlWriter builds a page in memory.
type htmlWriter struct{ bytes.Buffer }

// s writes markup as it is.
func (w *htmlWriter) s(m string) { w.WriteString(m) }

// f writes format, markup, with every %v replaced by its argument escaped
// for text or a double-quoted attribute value; an argument that is not a
// string is first formatted as fmt.Sprint formats it, as a template did.
// Formats hold no other verbs.
func (w *htmlWriter) f(format string, args ...any) {
	for i, a := range args {
		args[i] = escapeValue(a)
	}
	fmt.Fprintf(w, format, args...)
}

// escapeValue is a as the page writes it.
func escapeValue(a any) string {
	switch v := a.(type) {
	case markup:
		return string(v)
	case href:
		return escapeHTML(normalizeURL(string(v)))
	case cssValue:
		return escapeHTML(filterCSS(string(v)))
	case string:
		return escapeHTML(v)
	default:
		return escapeHTML(fmt.Sprint(v))
	}
}

// htmlEscaper is html/template's table for text and quoted attributes.
var htmlEscaper = strings.NewReplacer(
	"\x00", "\uFFFD", `"`, "&#34;", "&", "&amp;", "'", "&#39;", "+", "&#43;", "<", "&lt;", ">", "&gt;")

func escapeHTML(s string) string { return htmlEscaper.Replace(s) }

// normalizeURL refuses a scheme other than http, https and mailto and
// %-escapes what RFC 3986 does not allow unescaped, keeping escapes
// already there.
func normalizeURL(s string) string {
	if scheme, _, ok := strings.Cut(s, ":"); ok && !strings.Contains(scheme, "/") &&
		!strings.EqualFold(scheme, "http") && !strings.EqualFold(scheme, "https") && !strings.EqualFold(scheme, "mailto") {
		return "#" + filterFailsafe
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9',
			strings.IndexByte("-._~!#$&*+,/:;=?@[]", c) >= 0,
			c == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]):
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "%%%02x", c)
		}
	}
	return b.String()
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// filterCSS is s, or filterFailsafe when s holds a character that could
// leave the declaration's value ("--" included) or, read as its ASCII
// letters, digits and underscores, names expression() or -moz-binding.
func filterCSS(s string) string {
	if strings.ContainsAny(s, "\x00\"'()/;@[\\]`{}<>") || strings.Contains(s, "--") {
		return filterFailsafe
	}
	id := strings.Map(func(r rune) rune {
		switch {
		case 'a' <= r && r <= 'z', '0' <= r && r <= '9', r == '_':
			return r
		case 'A' <= r && r <= 'Z':
			return r + 'a' - 'A'
		}
		return -1
	}, s)
	if strings.Contains(id, "expression") || strings.Contains(id, "mozbinding") {
		return filterFailsafe
	}
	return s
}

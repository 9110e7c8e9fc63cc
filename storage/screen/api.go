package screen

import (
	"fmt"
	"sort"
	"strings"
)

// Check screens one value for the named field. It returns the value as Text,
// or a *Refusal naming the field and the first pattern (in table order) that
// matched.
func Check(field, value string) (Text, error) {
	if m, ok := scan(value); ok {
		return Text{}, &Refusal{Field: field, Pattern: m.pattern}
	}
	return Text{s: value}, nil
}

// CheckAll screens a list; a refusal names the element, e.g. "topics[2]".
func CheckAll(field string, values []string) ([]Text, error) {
	out := make([]Text, len(values))
	for i, v := range values {
		t, err := Check(fmt.Sprintf("%s[%d]", field, i), v)
		if err != nil {
			return nil, err
		}
		out[i] = t
	}
	return out, nil
}

// Anchor screens an anchor string. Every anchor gets Check; a url: anchor is
// also refused when it carries userinfo (pattern url-userinfo) or a query,
// fragment or path parameter named as a credential (pattern
// url-credential-param). Anchor syntax is validated elsewhere.
func Anchor(field, anchor string) (Text, error) {
	t, err := Check(field, anchor)
	if err != nil {
		return Text{}, err
	}
	if len(anchor) >= 4 && strings.EqualFold(anchor[:4], "url:") {
		if p := screenURL(anchor[4:]); p != "" {
			return Text{}, &Refusal{Field: field, Pattern: p}
		}
	}
	return t, nil
}

// Redact returns value as Text when it passes the screen, and otherwise the
// placeholder "[screened:<pattern>]". It is for audit detail and other context
// that must be kept even when it carries a secret.
func Redact(value string) Text {
	if m, ok := scan(value); ok {
		return Text{s: "[screened:" + m.pattern + "]"}
	}
	return Text{s: value}
}

// Patterns returns the stable pattern names, sorted.
func Patterns() []string {
	names := []string{patURLParam}
	for _, p := range patterns {
		names = append(names, p.name)
	}
	sort.Strings(names)
	return names
}

// match is a hit: the pattern, the upstream rule id when an upstream rule
// found it, and the span of the secret in the value. Only the pattern
// leaves the package; tests use the span to prove errors don't echo it.
type match struct {
	pattern    string
	rule       string
	start, end int
}

var noMatch = match{start: -1, end: -1}

// scan runs the pattern table over s and returns the first hit.
func scan(s string) (match, bool) {
	t := newText(s)
	for i := range patterns {
		p := &patterns[i]
		if p.findNamed != nil {
			if m := p.findNamed(t); m.start >= 0 {
				return m, true
			}
			continue
		}
		if start, end := p.find(t); start >= 0 {
			return match{pattern: p.name, start: start, end: end}, true
		}
	}
	return match{}, false
}

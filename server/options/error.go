package options

import (
	"errors"
	"fmt"
	"strings"
)

// Error is an invalid option. Option is the JSON key, with the element for
// list and object members (clients[1].scopes[0], ollama_models.review[2]).
// Msg never repeats a URL, a value holding '@', or a token hash.
type Error struct {
	Option string
	Msg    string
}

// Error returns `option "<Option>": <Msg>`.
func (e *Error) Error() string { return fmt.Sprintf("option %q: %s", e.Option, e.Msg) }

func errorf(option, format string, args ...any) *Error {
	return &Error{Option: option, Msg: fmt.Sprintf(format, args...)}
}

// errs collects errors, flattening joined ones.
type errs []error

func (l *errs) add(err error) {
	if err == nil {
		return
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			l.add(e)
		}
		return
	}
	*l = append(*l, err)
}

// maxErrors bounds how many errors one Parse or Validate reports, so that a
// file of a thousand bad entries gives a readable message.
const maxErrors = 20

func (l errs) err() error {
	switch {
	case len(l) == 0:
		return nil
	case len(l) == 1:
		return l[0]
	case len(l) > maxErrors:
		more := fmt.Errorf("options: %d more errors not shown", len(l)-maxErrors)
		return errors.Join(append(l[:maxErrors:maxErrors], more)...)
	}
	return errors.Join(l...)
}

// show quotes a user's value for an error message: at most 64 bytes, and
// nothing at all when it holds an '@', since that may be a URL's user
// name and password.
func show(s string) string {
	if strings.Contains(s, "@") {
		return "(value not shown: it holds an '@')"
	}
	if len(s) > 64 {
		return fmt.Sprintf("%q…", s[:64])
	}
	return fmt.Sprintf("%q", s)
}

// unknownKeyError refuses key at path, suggesting the nearest known key.
func unknownKeyError(path, key string, known []string) *Error {
	msg := "unknown option"
	if path != key {
		msg = "unknown key"
	}
	best, bestD := "", 3
	for _, k := range known {
		if d := distance(strings.ToLower(key), k); d < bestD {
			best, bestD = k, d
		}
	}
	if best != "" {
		msg += fmt.Sprintf("; did you mean %q?", best)
	}
	// A key is named as given, but like a value it is cut short and never
	// shown when it holds an '@'.
	switch {
	case strings.Contains(key, "@"):
		path = strings.TrimSuffix(path, key) + "(key not shown: it holds an '@')"
	case len(key) > 64:
		path = strings.TrimSuffix(path, key) + key[:64] + "…"
	}
	return &Error{Option: path, Msg: msg}
}

// distance is the Levenshtein distance of a and b, in bytes, capped at 3 for
// long inputs to stay cheap.
func distance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		if a == b {
			return 0
		}
		return 3
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

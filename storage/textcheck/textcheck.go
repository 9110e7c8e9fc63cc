// Package textcheck is the one test of the characters a stored text may
// hold (issue 41; docs/screen.md, "Control characters"): no control
// character (C0, DEL or C1; tab, line feed and carriage return only where
// a text may run over lines) and no bidirectional embedding, override or
// isolate (U+202A–U+202E, U+2066–U+2069), which can hide or reorder what a
// reader sees, or drive the terminal an agent's context is shown in. The
// server refuses such text on the way in (naming the field); the hook folds
// what is already stored on the way out (Fold).
package textcheck

import (
	"strings"
	"unicode/utf8"
)

// Placeholder is what Fold puts in place of a character it takes out.
const Placeholder = '\uFFFD'

// Unsafe reports whether r may not stand in a stored text. multiline lets
// tab, line feed and carriage return through.
func Unsafe(r rune, multiline bool) bool {
	switch {
	case r == '\t' || r == '\n' || r == '\r':
		return !multiline
	case r < 0x20, r >= 0x7f && r <= 0x9f:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}

// Find returns the first character of s that Unsafe refuses and its byte
// offset, or -1. s must be valid UTF-8.
func Find(s string, multiline bool) (rune, int) {
	for i, r := range s {
		if Unsafe(r, multiline) {
			return r, i
		}
	}
	return 0, -1
}

// Fold returns s with every character Unsafe refuses in multi-line text
// (and every invalid UTF-8 byte) replaced by Placeholder, so that it
// shows where something was taken out.
func Fold(s string) string {
	if _, i := Find(s, true); i < 0 && utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		if Unsafe(r, true) {
			r = Placeholder
		}
		b.WriteRune(r)
	}
	return b.String()
}

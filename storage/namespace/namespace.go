// Package namespace holds Hearth's namespace vocabulary: the forms a namespace
// may take (github/<owner>/<repo>, gitea/<owner>/<repo>, projects/<name>,
// topics/<name>, global, local/<name>) and their limits.
package namespace

import (
	"fmt"
	"strings"
)

// Limits from docs/design.md R-N7.
const (
	MaxLen      = 160 // characters in a whole namespace
	MaxTopics   = 8   // topics per request or record
	MaxTopicLen = 40  // characters in one topic
)

// Global is the namespace every scope chain ends in.
const Global = "global"

// kinds maps a namespace's first segment to the number of segments after it.
var kinds = map[string]int{
	"github":   2,
	"gitea":    2,
	"projects": 1,
	"topics":   1,
	"local":    1,
}

// Validate reports whether ns is a well-formed namespace. The error says what
// is wrong without repeating the value (a caller's value may be a secret);
// callers prefix the field name.
func Validate(ns string) error {
	if ns == "" {
		return fmt.Errorf("is required")
	}
	if len(ns) > MaxLen {
		return fmt.Errorf("is %d characters; at most %d", len(ns), MaxLen)
	}
	if ns == Global {
		return nil
	}
	parts := strings.Split(ns, "/")
	want, ok := kinds[parts[0]]
	if !ok {
		return fmt.Errorf("must start with github/, gitea/, projects/, topics/ or local/, or be global")
	}
	if len(parts)-1 != want {
		return fmt.Errorf("%s/ takes %d segment(s) after it", parts[0], want)
	}
	for _, seg := range parts[1:] {
		if err := ValidateSegment(seg); err != nil {
			return err
		}
	}
	return nil
}

// ValidateSegment checks one path segment: lower-case [a-z0-9._-], not empty,
// not made only of dots.
func ValidateSegment(seg string) error {
	if seg == "" {
		return fmt.Errorf("has an empty segment")
	}
	dots := true
	for i := 0; i < len(seg); i++ {
		c := seg[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '_', c == '-':
			dots = false
		case c == '.':
		default:
			return fmt.Errorf("segments may hold only a-z, 0-9, '.', '_' and '-'")
		}
	}
	if dots {
		return fmt.Errorf("a segment is only dots")
	}
	return nil
}

// ValidateTopic checks one topic name (1–40 characters, one segment).
func ValidateTopic(t string) error {
	if len(t) < 1 || len(t) > MaxTopicLen {
		return fmt.Errorf("must be 1–%d characters", MaxTopicLen)
	}
	return ValidateSegment(t)
}

// ValidateTopics checks a list of topics: at most MaxTopics, each valid, no
// duplicates.
func ValidateTopics(topics []string) error {
	if len(topics) > MaxTopics {
		return fmt.Errorf("has %d topics; at most %d", len(topics), MaxTopics)
	}
	seen := make(map[string]bool, len(topics))
	for i, t := range topics {
		if err := ValidateTopic(t); err != nil {
			return fmt.Errorf("[%d]: %w", i, err)
		}
		if seen[t] {
			return fmt.Errorf("[%d]: repeated", i)
		}
		seen[t] = true
	}
	return nil
}

package server

import (
	"math"
	"strings"
	"testing"
)

func TestServer_CheckCandidate(t *testing.T) {
	s := &Server{size: testSizer(t)}
	cases := []struct {
		name, typ, title, content string
		confidence                float64
		field                     string // "" for valid
	}{
		{"OK", "decision", "Use WAL", "SQLite runs in WAL mode.", 0.9, ""},
		{"ErrType", "fact", "t", "c", 0.5, "type"},
		{"ErrTitleEmpty", "note", " ", "c", 0.5, "title"},
		{"ErrTitleLong", "note", strings.Repeat("t", maxTitleChars+1), "c", 0.5, "title"},
		{"ErrContentLong", "note", "t", strings.Repeat("c", maxContentBytes+1), 0.5, "content"},
		{"ErrContentInvalidUTF8", "note", "t", "\xff", 0.5, "content"},
		{"ErrConfidenceZero", "note", "t", "c", 0, "confidence"},
		{"ErrConfidenceNaN", "note", "t", "c", math.NaN(), "confidence"},
		{"ErrConfidenceAboveOne", "note", "t", "c", 1.5, "confidence"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := s.CheckCandidate(tc.typ, tc.title, tc.content, tc.confidence)
			if got := fieldOf(t, err); got != tc.field {
				t.Errorf("got %v, want an error naming %q", err, tc.field)
			}
		})
	}
}

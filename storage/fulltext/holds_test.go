package fulltext

import (
	"slices"
	"testing"
)

// TestHolds: a query stem is held when a word of the texts stems to it,
// whatever its case or ending (Porter's y to i included), and not when a
// word merely starts like it.
func TestHolds(t *testing.T) {
	t.Parallel()
	stems := []string{Stem("retries"), Stem("policy"), Stem("postgres"), Stem("kafka")}
	got := Holds(stems, "Retry Policies", "We use POSTGRES; kafkaesque stems to itself")
	if want := []bool{true, true, true, false}; !slices.Equal(got, want) {
		t.Errorf("Holds(%q) = %v, want %v", stems, got, want)
	}
	if got := Holds(stems); !slices.Equal(got, []bool{false, false, false, false}) {
		t.Errorf("no text: %v", got)
	}
}

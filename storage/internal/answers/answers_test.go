package answers

import (
	"testing"
	"time"
)

// TestBasis checks what the basis digests: the cited ids in their order,
// each record's time, title and content, length-prefixed so that no two
// splits of the same bytes agree, and a mark for a record that is gone.
// How answers are stored and read on a database is tested through
// storage's DB (storage/questions_test.go), which both engines run.
func TestBasis(t *testing.T) {
	t.Parallel()
	at := time.UnixMilli(1_700_000_000_000).UTC()
	a := BasisRecord{ID: "a", UpdatedAt: at, Title: "ti", Content: "tle"}
	b := BasisRecord{ID: "b", UpdatedAt: at, Title: "t", Content: "itle"}
	base := Basis([]string{"a", "b"}, []BasisRecord{b, a})
	if len(base) != 64 {
		t.Fatalf("basis %q is not 64 hex digits", base)
	}
	for name, got := range map[string]string{
		"the records' order":  Basis([]string{"a", "b"}, []BasisRecord{a, b}),
		"an unrelated record": Basis([]string{"a", "b"}, []BasisRecord{a, b, {ID: "c"}}),
	} {
		if got != base {
			t.Errorf("%s changed the basis", name)
		}
	}
	moved := a
	moved.UpdatedAt = at.Add(time.Millisecond)
	split := a
	split.Title, split.Content = "tit", "le"
	for name, got := range map[string]string{
		"the citation order": Basis([]string{"b", "a"}, []BasisRecord{a, b}),
		"a record gone":      Basis([]string{"a", "b"}, []BasisRecord{a}),
		"a newer record":     Basis([]string{"a", "b"}, []BasisRecord{moved, b}),
		"another split":      Basis([]string{"a", "b"}, []BasisRecord{split, b}),
	} {
		if got == base {
			t.Errorf("%s left the basis as it was", name)
		}
	}
}

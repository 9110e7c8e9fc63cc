package sessions_test

import (
	"strings"
	"testing"

	"github.com/hearth-memory/hearth/storage/internal/sessions"
)

func TestCloseDigest(t *testing.T) {
	t.Parallel()
	a := sessions.CloseDigest("c", "ab", "c")
	if len(a) != 64 {
		t.Fatalf("digest %q is not 64 hex digits", a)
	}
	for _, other := range []string{
		sessions.CloseDigest("c", "a", "bc"), // length prefixes keep boundaries
		sessions.CloseDigest("d", "ab", "c"),
		sessions.CloseDigest("c", "ab", "c", ""),
	} {
		if other == a {
			t.Errorf("different inputs digest alike")
		}
	}
	if sessions.CloseDigest("c", "ab", "c") != a {
		t.Errorf("digest is not deterministic")
	}
}

func TestValidOpID(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]bool{
		"abcdefgh": true, "A_b-9xyz": true, strings.Repeat("a", 64): true,
		"abcdefg": false, strings.Repeat("a", 65): false, "abcd efgh": false, "abcd.efgh": false, "": false,
	} {
		if got := sessions.ValidOpID(s); got != want {
			t.Errorf("ValidOpID(%q) = %v, want %v", s, got, want)
		}
	}
}

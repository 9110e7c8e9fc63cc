package jobq

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestLastError checks what a job keeps of its failures: the newest text
// first, the whole cut to maxLastErrorChars characters (not bytes), and
// a secret quoted in it screened. The queue's behaviour on a database is
// tested through storage's DB (storage/jobs_test.go), which both engines
// run.
func TestLastError(t *testing.T) {
	t.Parallel()
	if got := lastError("attempt 1: model down", "attempt 2: disk full"); got != "attempt 2: disk full; before: attempt 1: model down" {
		t.Errorf("joined = %q", got)
	}
	if got := lastError("earlier", ""); got != "" {
		t.Errorf("empty message = %q, want empty", got)
	}
	got := lastError("earlier", strings.Repeat("é", 2*maxLastErrorChars))
	if n := utf8.RuneCountInString(got); n != maxLastErrorChars || !strings.HasSuffix(got, "é…") || strings.Contains(got, "earlier") {
		t.Errorf("cut to %d characters, ending %q; want %d ending in é…", n, got[len(got)-8:], maxLastErrorChars)
	}
	if got := lastError("", "attempt 1: token ghp_aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5 refused"); got != "[screened:github-token]" {
		t.Errorf("secret = %q, want it screened", got)
	}
}

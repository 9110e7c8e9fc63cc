package tokens

import (
	"errors"
	"strings"
	"testing"

	"github.com/hearth-memory/hearth/storage/internal/errs"
)

// TestCheck keeps a token's hash as 64 hex digits in lower case and
// refuses anything else naming the field. Storing and reading tokens on a
// database is tested through storage's DB (storage/status_test.go), which
// both engines run.
func TestCheck(t *testing.T) {
	t.Parallel()
	hex := strings.Repeat("0123456789abcdef", 4)
	if got, err := Check("codex", strings.ToUpper(hex)); err != nil || got != hex {
		t.Errorf("Check(upper case) = %q, %v; want %q", got, err, hex)
	}
	for _, c := range []struct{ client, hash, field string }{
		{"", hex, "client"},
		{"codex", hex[:63], "token_sha256"},
		{"codex", hex + "0", "token_sha256"},
		{"codex", hex[:63] + "g", "token_sha256"},
	} {
		_, err := Check(c.client, c.hash)
		var e *errs.Error
		if !errors.As(err, &e) || e.Code != errs.Invalid || e.Field != c.field {
			t.Errorf("Check(%q, %q) = %v; want Invalid naming %s", c.client, c.hash, err, c.field)
		}
	}
}

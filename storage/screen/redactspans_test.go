package screen

import (
	"strings"
	"testing"
)

// TestRedactSpans: each secret becomes its placeholder and the text around
// it stays; the result passes the screen.
func TestRedactSpans(t *testing.T) {
	t.Parallel()
	const gh = "ghp_R8mK2xQ7vN4pL9sT3wY6zB1cF5hJ0dG8aE2u"
	const aws = "AKIAQ3EGUMXR7PLWJZ5N"
	in := `{"memories":[{"title":"CI","content":"push with ` + gh + ` then"},{"content":"key ` + aws + ` here"}]}`
	got := RedactSpans(in).String()
	if strings.Contains(got, gh) || strings.Contains(got, aws) {
		t.Fatalf("a secret is left: %s", got)
	}
	if !strings.Contains(got, `"push with [screened:`) || !strings.Contains(got, `then"},{"content":"key [screened:`) {
		t.Fatalf("the text around the secrets is lost: %s", got)
	}
	if _, err := Check("x", got); err != nil {
		t.Fatalf("the result does not pass the screen: %v", err)
	}
	if got := RedactSpans("the wifi password is on the fridge, do-not-store").String(); got != "[screened:no-store-marker]" {
		t.Fatalf("a marked value: got %q, want the whole value screened", got)
	}
	if got := RedactSpans("nothing secret").String(); got != "nothing secret" {
		t.Fatalf("clean text changed: %q", got)
	}
}

func FuzzRedactSpans(f *testing.F) {
	f.Add("push with ghp_R8mK2xQ7vN4pL9sT3wY6zB1cF5hJ0dG8aE2u then")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		if _, err := Check("x", RedactSpans(s).String()); err != nil {
			t.Fatalf("RedactSpans(%q) does not pass the screen: %v", s, err)
		}
	})
}

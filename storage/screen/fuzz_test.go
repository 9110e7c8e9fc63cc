package screen

import (
	"errors"
	"strings"
	"testing"
)

// FuzzCheck checks the screen's properties on any input: it never panics,
// it is deterministic, a refusal names the pattern and never the secret,
// a pass returns the value unchanged, Redact's output always passes,
// Anchor is never laxer than Check, and an upstream rule run on its
// anchors finds a secret whenever it finds one run on the whole value.
func FuzzCheck(f *testing.F) {
	for _, e := range readCorpus(f, "secrets.txt", true) {
		f.Add(e.text)
	}
	for _, e := range readCorpus(f, "benign.txt", false) {
		f.Add(e.text)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := Check("content", s)
		got2, err2 := Check("content", s)
		if got != got2 || (err == nil) != (err2 == nil) || err != nil && err.Error() != err2.Error() {
			t.Fatalf("not deterministic: got %q/%v, then %q/%v", got.String(), err, got2.String(), err2)
		}
		m, hit := scan(s)
		if hit != (err != nil) {
			t.Fatalf("scan hit=%v, Check err=%v", hit, err)
		}
		if err == nil {
			if got.String() != s {
				t.Fatalf("pass: got %q, want the value back", got.String())
			}
		} else {
			var r *Refusal
			if !errors.As(err, &r) || r.Field != "content" || r.Pattern != m.pattern {
				t.Fatalf("got %v, want *Refusal{content, %s}", err, m.pattern)
			}
			if m.start < 0 || m.end > len(s) || m.start >= m.end {
				t.Fatalf("pattern %s: bad span [%d,%d) in %d bytes", m.pattern, m.start, m.end, len(s))
			}
			// The message is exactly field and pattern; so the secret span
			// can only appear in it by coinciding with that fixed text.
			want := (&Refusal{Field: "content", Pattern: m.pattern}).Error()
			if msg := err.Error(); msg != want {
				t.Fatalf("got message %q, want %q", msg, want)
			}
			if span := s[m.start:m.end]; m.pattern != patMarker && strings.Contains(err.Error(), span) && !strings.Contains(skeleton, span) {
				t.Fatalf("message %q echoes the secret %q", err.Error(), span)
			}
		}
		for _, r := range firedRules(newText(s)) {
			if w := r.find(s, false); w.start >= 0 && r.find(s, true).start < 0 {
				t.Fatalf("rule %s: got no hit anchored, want the whole-value hit %q", r.id, s[w.start:w.end])
			}
		}
		red := Redact(s).String()
		if _, err := Check("detail", red); err != nil {
			t.Fatalf("Redact gave %q, which Check refuses: %v", red, err)
		}
		if err != nil && red != "[screened:"+m.pattern+"]" {
			t.Fatalf("Redact: got %q, want [screened:%s]", red, m.pattern)
		}
		for _, a := range []string{"url:" + s, "url:https://" + s, s} {
			_, aerr := Anchor("anchor", a)
			_, cerr := Check("anchor", a)
			if cerr != nil && aerr == nil {
				t.Fatalf("Anchor(%q) passed what Check refuses: %v", a, cerr)
			}
		}
	})
}

// skeleton is the fixed text of every refusal message.
var skeleton = (&Refusal{Field: "content", Pattern: strings.Join(Patterns(), " ")}).Error()

// Package screen is the trust boundary for persisted text: every string
// Hearth writes to disk is first turned into a Text by this package, and
// storage's write functions accept only Text, so a new write path cannot
// skip the screen (docs/design.md R-S1..R-S6).
//
// A value that looks like a secret is refused with a *Refusal that names the
// field and a stable pattern name (Patterns), never the secret. The
// patterns, the name and placeholder rules, the command lines and prose it
// reads, and the gitleaks rules it runs (generated into upstream_rules.go)
// are documented in docs/screen.md.
package screen

import "fmt"

// Text is a string that passed the screen. Its zero value is the empty string,
// which is always safe.
type Text struct{ s string }

// String returns the screened value.
func (t Text) String() string { return t.s }

// Refusal reports that a value was refused. Field and Pattern are safe to show
// to callers and to write to the audit; the refused value is never kept.
type Refusal struct {
	Field   string // the request field, e.g. "content" or "changes.anchors[2]"
	Pattern string // the stable pattern name, e.g. "aws-access-key"
}

func (r *Refusal) Error() string {
	return fmt.Sprintf("%s: refused: looks like a secret (pattern %s)", r.Field, r.Pattern)
}

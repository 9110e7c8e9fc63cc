// Package anchors is the stored side of a record's anchors (docs/design.md
// R-H1, R-H2, "Storage layout"): their states and last checks, the rows
// that keep them, what a client's report or a sweep changes, the flag of
// a record with an unavailable anchor and the flagged records status
// lists. Package anchor, outside internal/, is the parser of an anchor's
// text; this package keeps what was found about it.
//
// It works inside the engine's transactions (*engine.Tx). A change's
// effect on its record (the revision, the audit row) is the storage
// package's. Its refusals are *errs.Error.
package anchors

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/hearth-memory/hearth/storage/anchor"
	"github.com/hearth-memory/hearth/storage/internal/engine"
	"github.com/hearth-memory/hearth/storage/internal/errs"
	"github.com/hearth-memory/hearth/storage/internal/sqlval"
	"github.com/hearth-memory/hearth/storage/screen"
)

// Anchor states (docs/design.md R-H1). New anchors are unknown until checked.
const (
	Unknown     = "unknown"
	Available   = "available"
	Unavailable = "unavailable"
)

// Anchor is a thing a record depends on, such as "path:src/x.go", with the
// check that gave it its state: when (zero while never checked), by whom (a
// client's name, or the sweep) and a short screened detail. A check that
// finds the state unchanged changes nothing, so CheckedAt is when the state
// began.
type Anchor struct {
	Anchor    string
	State     string
	CheckedAt time.Time
	CheckedBy string
	Detail    string
}

// Load returns the anchors of the records ids names, in their stored
// order, by record id; a record without anchors is absent.
func Load(ctx context.Context, tx *engine.Tx, ids []string) (map[string][]Anchor, error) {
	out := map[string][]Anchor{}
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := tx.QueryContext(ctx, sqlLoad, sqlval.Strings(ids))
	if err != nil {
		return nil, errs.Wrap("find anchors", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			id      string
			a       Anchor
			checked sql.NullInt64
		)
		if err := rows.Scan(&id, &a.Anchor, &a.State, &checked, &a.CheckedBy, &a.Detail); err != nil {
			return nil, errs.Wrap("find anchors", err)
		}
		a.CheckedAt = sqlval.Time(checked)
		out[id] = append(out[id], a)
	}
	return out, errs.Wrap("find anchors", rows.Err())
}

// Insert writes anchors for record id in the order given.
func Insert(ctx context.Context, tx *engine.Tx, id string, anchors []Anchor) error {
	for i, a := range anchors {
		var checked any
		if !a.CheckedAt.IsZero() {
			checked = a.CheckedAt.UnixMilli()
		}
		if _, err := tx.ExecContext(ctx, sqlInsert, id, a.Anchor, i, a.State, checked, a.CheckedBy, a.Detail); err != nil {
			return errs.Wrap("insert anchors", err)
		}
	}
	return nil
}

// KeepStates returns the anchors named, in order; an anchor the record
// already had keeps its state and last check, a new one starts unknown.
func KeepStates(old []Anchor, names []string) []Anchor {
	out := make([]Anchor, len(names))
	for i, n := range names {
		out[i] = Anchor{Anchor: n, State: Unknown}
		if j := Index(old, n); j >= 0 {
			out[i] = old[j]
		}
	}
	return out
}

// Names returns the anchors' texts, in order.
func Names(as []Anchor) []string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = a.Anchor
	}
	return out
}

// Index returns the position of name in as, or -1.
func Index(as []Anchor, name string) int {
	for i, a := range as {
		if a.Anchor == name {
			return i
		}
	}
	return -1
}

// Check refuses, as Invalid naming field, an anchor that the anchor
// parser refuses: storage keeps only anchors in their stored form.
func Check(field, a string) error {
	if _, err := anchor.Parse(a); err != nil {
		return errs.Errorf(errs.Invalid, field, "%v", err)
	}
	return nil
}

// CheckList is Check on each anchor of a list, naming "<field>[i]".
func CheckList(field string, as []screen.Text) error {
	for i, a := range as {
		if err := Check(fmt.Sprintf("%s[%d]", field, i), a.String()); err != nil {
			return err
		}
	}
	return nil
}

// Flag marks a record with an unavailable anchor (docs/design.md R-H2):
// the first such anchor in the record's order, since when it is
// unavailable (zero if that was never recorded), and how many of its
// anchors are.
type Flag struct {
	Anchor string
	Since  time.Time
	Count  int
}

// FlagOf returns the flag of a record with anchors as, or nil when none of
// them is unavailable.
func FlagOf(as []Anchor) *Flag {
	var f *Flag
	for _, a := range as {
		if a.State != Unavailable {
			continue
		}
		if f == nil {
			f = &Flag{Anchor: a.Anchor, Since: a.CheckedAt}
		}
		f.Count++
	}
	return f
}

// Replace gives record id the anchors as, in order, in place of those it had.
func Replace(ctx context.Context, tx *engine.Tx, id string, as []Anchor) error {
	if _, err := tx.ExecContext(ctx, sqlDelete, id); err != nil {
		return errs.Wrap("replace anchors", err)
	}
	return Insert(ctx, tx, id, as)
}

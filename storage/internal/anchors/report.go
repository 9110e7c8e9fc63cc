package anchors

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hearth-memory/hearth/storage/anchor"
	"github.com/hearth-memory/hearth/storage/internal/engine"
	"github.com/hearth-memory/hearth/storage/internal/errs"
	"github.com/hearth-memory/hearth/storage/internal/sqlval"
	"github.com/hearth-memory/hearth/storage/screen"
)

// Report is what a client found about one anchor of one record
// (memory_anchor_report).
type Report struct {
	// ID is the record, Anchor one of its anchors as stored.
	ID, Anchor string
	// State is Available or Unavailable.
	State string
	// Detail says briefly what was found; it may be empty.
	Detail screen.Text
	// Field prefixes the request fields errors name: "" for a single
	// report, "reports[2]." for one of a list.
	Field string
}

// Result is where one report left its anchor.
type Result struct {
	ID, Anchor string
	// State is the anchor's state after every report of the call.
	State string
	// Changed says whether the call changed the anchor's state.
	Changed bool
	// Revision is the record's revision after the call.
	Revision int
}

// CheckReportedState refuses a reported anchor state other than available
// or unavailable: Invalid naming field.
func CheckReportedState(field, s string) error {
	if s != Available && s != Unavailable {
		return errs.Errorf(errs.Invalid, field, "must be %s or %s", Available, Unavailable)
	}
	return nil
}

// Validate returns Invalid for a state other than available or unavailable
// (Field "<prefix>state"), no record (Field "<prefix>id"), or an anchor
// that does not parse or is an entity anchor, which only the sweep checks
// (Field "<prefix>anchor").
func (r *Report) Validate() error {
	if err := CheckReportedState(r.Field+"state", r.State); err != nil {
		return err
	}
	switch {
	case r.ID == "":
		return errs.Errorf(errs.Invalid, r.Field+"id", "is required")
	}
	a, err := anchor.Parse(r.Anchor)
	switch {
	case err != nil:
		return errs.Errorf(errs.Invalid, r.Field+"anchor", "%v", err)
	case a.Kind() == anchor.Entity:
		return errs.Errorf(errs.Invalid, r.Field+"anchor",
			"entity anchors are checked against Home Assistant by the sweep (memory_anchor_sweep), not reported")
	}
	return nil
}

// Key names one anchor of one record.
type Key struct{ ID, Anchor string }

// Change is one anchor's state before a call (Was) and as the call leaves
// it (Now), with its record's namespace and its place among the record's
// anchors.
type Change struct {
	Namespace string
	Position  int
	Was, Now  Anchor
}

// Owner is what a report needs of the record it names: its namespace and
// anchors as stored.
type Owner struct {
	Namespace string
	Anchors   []Anchor
}

// Gather applies validated reports, in order, to the anchors of their
// records, which find gives (its error is returned as it is): the last
// report of an anchor decides its state, taking now, client and the
// report's detail when it changes the state. It returns NotFound (Field
// "<prefix>anchor") for an anchor the record does not have.
func Gather(reports []Report, now time.Time, client string, find func(r *Report) (*Owner, error)) (map[Key]*Change, error) {
	changes := map[Key]*Change{}
	for i := range reports {
		r := &reports[i]
		key := Key{r.ID, r.Anchor}
		c := changes[key]
		if c == nil {
			o, err := find(r)
			if err != nil {
				return nil, err
			}
			j := Index(o.Anchors, r.Anchor)
			if j < 0 {
				return nil, errs.Errorf(errs.NotFound, r.Field+"anchor", "the record has no such anchor (see its anchors with memory_get)")
			}
			c = &Change{Namespace: o.Namespace, Position: j, Was: o.Anchors[j], Now: o.Anchors[j]}
			changes[key] = c
		}
		if c.Now.State != r.State {
			c.Now = Anchor{Anchor: r.Anchor, State: r.State, CheckedAt: now, CheckedBy: client, Detail: r.Detail.String()}
		}
	}
	return changes, nil
}

// Results says where reports left their anchors, given the changes Gather
// made and the records' revisions after the call.
func Results(reports []Report, changes map[Key]*Change, revisions map[string]int) []Result {
	out := make([]Result, len(reports))
	for i, r := range reports {
		c := changes[Key{r.ID, r.Anchor}]
		out[i] = Result{ID: r.ID, Anchor: r.Anchor, State: c.Now.State,
			Changed: c.Now.State != c.Was.State, Revision: revisions[r.ID]}
	}
	return out
}

// Touched is a record whose anchors a call changed: Detail names each
// change, in the record's anchor order, as "<anchor> <old>→<new>" with the
// detail found.
type Touched struct {
	ID, Namespace, Detail string
}

// Apply writes the anchors of changes whose state differs from what it
// was, and returns the records they belong to, in id order (none when
// nothing changed). A sweep may change thousands of anchors, so the
// write is one set-based statement over a JSON list rather than a
// statement per row.
func Apply(ctx context.Context, tx *engine.Tx, changes map[Key]*Change) ([]Touched, error) {
	type row struct {
		RecordID string `json:"r"`
		Anchor   string `json:"a"`
		State    string `json:"s"`
		At       int64  `json:"t"`
		By       string `json:"b"`
		Detail   string `json:"d"`
	}
	type line struct {
		position int
		text     string
	}
	type touched struct {
		namespace string
		lines     []line
	}
	var rows []row
	byRecord := map[string]*touched{}
	var ids []string
	for key, c := range changes {
		if c.Now.State == c.Was.State {
			continue
		}
		rows = append(rows, row{key.ID, key.Anchor, c.Now.State, c.Now.CheckedAt.UnixMilli(), c.Now.CheckedBy, c.Now.Detail})
		t := byRecord[key.ID]
		if t == nil {
			t = &touched{namespace: c.Namespace}
			byRecord[key.ID] = t
			ids = append(ids, key.ID)
		}
		text := key.Anchor + " " + c.Was.State + "→" + c.Now.State
		if c.Now.Detail != "" {
			text += " (" + c.Now.Detail + ")"
		}
		t.lines = append(t.lines, line{c.Position, text})
	}
	if len(rows) == 0 {
		return nil, nil
	}
	list, err := json.Marshal(rows)
	if err != nil {
		return nil, fmt.Errorf("storage: anchor state: %w", err)
	}
	if _, err := tx.ExecContext(ctx, sqlApply, string(list)); err != nil {
		return nil, errs.Wrap("anchor state", err)
	}
	// Records in id order, and each record's anchors in their own order, so
	// the audit reads the same whatever order the map gave.
	slices.Sort(ids)
	out := make([]Touched, len(ids))
	for i, id := range ids {
		t := byRecord[id]
		slices.SortFunc(t.lines, func(a, b line) int { return cmp.Compare(a.position, b.position) })
		texts := make([]string, len(t.lines))
		for j, l := range t.lines {
			texts[j] = l.text
		}
		out[i] = Touched{ID: id, Namespace: t.namespace, Detail: strings.Join(texts, "; ")}
	}
	return out, nil
}

// EntityID returns the entity id an entity anchor names.
func EntityID(a string) string { return strings.TrimPrefix(a, entityPrefix) }

// Entities returns the entity anchors of active and candidate records as
// unchanged changes (Now is Was), and their keys in the order read: what
// a sweep compares with Home Assistant's states.
func Entities(ctx context.Context, tx *engine.Tx) (map[Key]*Change, []Key, error) {
	rows, err := tx.QueryContext(ctx, sqlEntities, entityPrefix, entityEnd)
	if err != nil {
		return nil, nil, errs.Wrap("sweep", err)
	}
	defer rows.Close()
	changes := map[Key]*Change{}
	var keys []Key
	for rows.Next() {
		var (
			c       Change
			id      string
			checked sql.NullInt64
		)
		if err := rows.Scan(&id, &c.Namespace, &c.Was.Anchor, &c.Position, &c.Was.State, &checked,
			&c.Was.CheckedBy, &c.Was.Detail); err != nil {
			return nil, nil, errs.Wrap("sweep", err)
		}
		c.Was.CheckedAt = sqlval.Time(checked)
		c.Now = c.Was
		k := Key{id, c.Was.Anchor}
		changes[k] = &c
		keys = append(keys, k)
	}
	if err := rows.Close(); err != nil {
		return nil, nil, errs.Wrap("sweep", err)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, errs.Wrap("sweep", err)
	}
	return changes, keys, nil
}

package storage

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hearth-memory/hearth/storage/anchor"
	"github.com/hearth-memory/hearth/storage/screen"
)

// AnchorReport is what a client found about one anchor of one record
// (memory_anchor_report).
type AnchorReport struct {
	// ID is the record, Anchor one of its anchors as stored.
	ID, Anchor string
	// State is AnchorAvailable or AnchorUnavailable.
	State string
	// Detail says briefly what was found; it may be empty.
	Detail screen.Text
	// Field prefixes the request fields errors name: "" for a single
	// report, "reports[2]." for one of a list.
	Field string
}

// AnchorResult is where one report left its anchor.
type AnchorResult struct {
	ID, Anchor string
	// State is the anchor's state after every report of the call.
	State string
	// Changed says whether the call changed the anchor's state.
	Changed bool
	// Revision is the record's revision after the call.
	Revision int
}

// anchorKey names one anchor of one record.
type anchorKey struct{ id, anchor string }

// ReportAnchors applies client's reports, in order, in one transaction, and
// returns a result per report and the record the first report names as it
// then stands (docs/design.md R-H1, R-R6). An anchor whose state the reports leave as
// it was is not touched: no revision, no audit row, its checked_at kept.
// Each record whose anchors changed advances its revision once and gets one
// audit row (ActionAnchor) naming every change; the anchors take the time,
// the client (checked_by) and the detail of the report that set them.
//
// Clients report path:, host: and url: anchors; entity: anchors are the
// sweep's (Sweep). It returns Invalid for no reports or an empty client,
// for a state other than available or unavailable (Field "<prefix>state"),
// an anchor that does not parse or is an entity anchor (Field
// "<prefix>anchor"), or a record that is superseded or deleted (Field
// "<prefix>id"); NotFound (Field "<prefix>id") for an unknown record and
// NotFound (Field "<prefix>anchor") for an anchor the record does not have.
// A refusal writes nothing.
func (db *DB) ReportAnchors(ctx context.Context, client string, reports []AnchorReport) ([]AnchorResult, *Record, error) {
	switch {
	case client == "":
		return nil, nil, errorf(Invalid, "client", "is required")
	case len(reports) == 0:
		return nil, nil, errorf(Invalid, "reports", "names no anchor")
	}
	for _, r := range reports {
		if err := r.validate(); err != nil {
			return nil, nil, err
		}
	}
	var (
		results []AnchorResult
		first   *Record
	)
	if err := db.writeGrouped(ctx, "report anchors", func(tx *txn) (err error) {
		results, first, err = reportAnchorsTx(ctx, tx, client, reports)
		return err
	}); err != nil {
		return nil, nil, err
	}
	return results, first, nil
}

// CheckReportedState refuses a reported anchor state other than available
// or unavailable: Invalid naming field.
func CheckReportedState(field, s string) error {
	if s != AnchorAvailable && s != AnchorUnavailable {
		return errorf(Invalid, field, "must be %s or %s", AnchorAvailable, AnchorUnavailable)
	}
	return nil
}

func (r *AnchorReport) validate() error {
	if err := CheckReportedState(r.Field+"state", r.State); err != nil {
		return err
	}
	switch {
	case r.ID == "":
		return errorf(Invalid, r.Field+"id", "is required")
	}
	a, err := anchor.Parse(r.Anchor)
	switch {
	case err != nil:
		return errorf(Invalid, r.Field+"anchor", "%v", err)
	case a.Kind() == anchor.Entity:
		return errorf(Invalid, r.Field+"anchor",
			"entity anchors are checked against Home Assistant by the sweep (memory_anchor_sweep), not reported")
	}
	return nil
}

// anchorChange is one anchor's state before a call and as the call leaves it.
type anchorChange struct {
	namespace string
	position  int
	was, now  Anchor
}

// reportAnchorsTx applies validated reports inside the caller's transaction.
func reportAnchorsTx(ctx context.Context, tx *txn, client string, reports []AnchorReport) ([]AnchorResult, *Record, error) {
	recs := map[string]*Record{}
	changes := map[anchorKey]*anchorChange{}
	for _, r := range reports {
		rec := recs[r.ID]
		if rec == nil {
			var err error
			if rec, err = findRecordTx(ctx, tx, r.ID); err != nil {
				if ErrorCode(err) == NotFound {
					return nil, nil, errorf(NotFound, r.Field+"id", "no record has this id")
				}
				return nil, nil, err
			}
			if !rec.Live() {
				return nil, nil, errorf(Invalid, r.Field+"id", "record is %s; anchors are reported on active and candidate records", rec.Status)
			}
			recs[r.ID] = rec
		}
		key := anchorKey{r.ID, r.Anchor}
		c := changes[key]
		if c == nil {
			i := anchorIndex(rec.Anchors, r.Anchor)
			if i < 0 {
				return nil, nil, errorf(NotFound, r.Field+"anchor", "the record has no such anchor (see its anchors with memory_get)")
			}
			c = &anchorChange{namespace: rec.Namespace, position: i, was: rec.Anchors[i], now: rec.Anchors[i]}
			changes[key] = c
		}
		if c.now.State != r.State {
			c.now = Anchor{Anchor: r.Anchor, State: r.State, CheckedAt: tx.Now, CheckedBy: client, Detail: r.Detail.String()}
		}
	}
	revisions, err := applyAnchorChangesTx(ctx, tx, client, "", changes, recs)
	if err != nil {
		return nil, nil, err
	}
	results := make([]AnchorResult, len(reports))
	for i, r := range reports {
		c := changes[anchorKey{r.ID, r.Anchor}]
		results[i] = AnchorResult{ID: r.ID, Anchor: r.Anchor, State: c.now.State,
			Changed: c.now.State != c.was.State, Revision: revisions[r.ID]}
	}
	first, err := findRecordTx(ctx, tx, reports[0].ID)
	if err != nil {
		return nil, nil, err
	}
	return results, first, nil
}

// applyAnchorChangesTx writes the anchors of changes whose state differs
// from what it was, advances each such record's revision once and writes its
// audit row as client, the detail prefixed by prefix. It returns the
// revision of every record of recs after the writes (recs holds them as
// read; nil when the caller needs none). A sweep may change thousands of
// anchors, so each of the three writes is one set-based statement over a
// JSON list rather than a statement per row.
func applyAnchorChangesTx(ctx context.Context, tx *txn, client, prefix string, changes map[anchorKey]*anchorChange, recs map[string]*Record) (map[string]int, error) {
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
		if c.now.State == c.was.State {
			continue
		}
		rows = append(rows, row{key.id, key.anchor, c.now.State, c.now.CheckedAt.UnixMilli(), c.now.CheckedBy, c.now.Detail})
		t := byRecord[key.id]
		if t == nil {
			t = &touched{namespace: c.namespace}
			byRecord[key.id] = t
			ids = append(ids, key.id)
		}
		text := key.anchor + " " + c.was.State + "→" + c.now.State
		if c.now.Detail != "" {
			text += " (" + c.now.Detail + ")"
		}
		t.lines = append(t.lines, line{c.position, text})
	}
	revisions := make(map[string]int, len(recs))
	for id, r := range recs {
		revisions[id] = r.Revision
	}
	if len(rows) == 0 {
		return revisions, nil
	}
	list, err := json.Marshal(rows)
	if err != nil {
		return nil, fmt.Errorf("storage: anchor state: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `
		UPDATE anchors SET state = c.state, checked_at = CAST(c.at AS BIGINT), checked_by = c.by, detail = c.detail
		FROM (SELECT value ->> 'r' AS record_id, value ->> 'a' AS anchor, value ->> 's' AS state,
				value ->> 't' AS at, value ->> 'b' AS by, value ->> 'd' AS detail
			FROM json_each(?)) AS c
		WHERE anchors.record_id = c.record_id AND anchors.anchor = c.anchor`, string(list),
	); err != nil {
		return nil, classify("anchor state", err)
	}
	// Records in id order, and each record's anchors in their own order, so
	// the audit reads the same whatever order the map gave.
	slices.Sort(ids)
	if _, err := tx.ExecContext(ctx, `
		UPDATE records SET revision = revision + 1, updated_at = ? WHERE id IN (SELECT value FROM json_each(?))`,
		tx.Now.UnixMilli(), jsonList(ids),
	); err != nil {
		return nil, classify("anchor state", err)
	}
	entries := make([]AuditEntry, len(ids))
	for i, id := range ids {
		t := byRecord[id]
		revisions[id]++
		slices.SortFunc(t.lines, func(a, b line) int { return cmp.Compare(a.position, b.position) })
		texts := make([]string, len(t.lines))
		for j, l := range t.lines {
			texts[j] = l.text
		}
		entries[i] = AuditEntry{Client: client, Action: ActionAnchor, Namespace: t.namespace, RecordID: id,
			Detail: screen.Redact(prefix + strings.Join(texts, "; "))}
	}
	if err := insertAuditsTx(ctx, tx, entries); err != nil {
		return nil, err
	}
	return revisions, nil
}

// anchorIndex returns the position of name in as, or -1.
func anchorIndex(as []Anchor, name string) int {
	for i, a := range as {
		if a.Anchor == name {
			return i
		}
	}
	return -1
}

// AnchorFlag marks a record with an unavailable anchor (docs/design.md R-H2): the
// first such anchor in the record's order, since when it is unavailable
// (zero if that was never recorded), and how many of its anchors are.
type AnchorFlag struct {
	Anchor string
	Since  time.Time
	Count  int
}

// Unavailable returns the record's flag, or nil when no anchor of it is
// unavailable.
func (r *Record) Unavailable() *AnchorFlag {
	return flagOf(r.Anchors)
}

func flagOf(as []Anchor) *AnchorFlag {
	var f *AnchorFlag
	for _, a := range as {
		if a.State != AnchorUnavailable {
			continue
		}
		if f == nil {
			f = &AnchorFlag{Anchor: a.Anchor, Since: a.CheckedAt}
		}
		f.Count++
	}
	return f
}

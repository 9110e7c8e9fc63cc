package storage

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/hearth-memory/hearth/storage/anchor"
	"github.com/hearth-memory/hearth/storage/screen"
)

// attachAnchorsTx loads the anchors of recs, in their stored order.
func attachAnchorsTx(ctx context.Context, tx *txn, recs []*Record) error {
	if len(recs) == 0 {
		return nil
	}
	byID := make(map[string]*Record, len(recs))
	ids := make([]string, len(recs))
	for i, r := range recs {
		byID[r.ID] = r
		ids[i] = r.ID
	}
	rows, err := tx.QueryContext(ctx, `
		SELECT record_id, anchor, state, checked_at, checked_by, detail FROM anchors
		WHERE record_id IN (SELECT value FROM json_each(?))
		ORDER BY record_id, position`, jsonList(ids))
	if err != nil {
		return classify("find anchors", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			id      string
			a       Anchor
			checked sql.NullInt64
		)
		if err := rows.Scan(&id, &a.Anchor, &a.State, &checked, &a.CheckedBy, &a.Detail); err != nil {
			return classify("find anchors", err)
		}
		a.CheckedAt = fromMS(checked)
		if r := byID[id]; r != nil {
			r.Anchors = append(r.Anchors, a)
		}
	}
	return classify("find anchors", rows.Err())
}

// insertAnchorsTx writes anchors for record id in the order given.
func insertAnchorsTx(ctx context.Context, tx *txn, id string, anchors []Anchor) error {
	for i, a := range anchors {
		if _, err := tx.ExecContext(ctx, `
			INSERT INTO anchors (record_id, anchor, position, state, checked_at, checked_by, detail)
			VALUES (?, ?, ?, ?, ?, ?, ?)`,
			id, a.Anchor, i, a.State, ms(a.CheckedAt), a.CheckedBy, a.Detail,
		); err != nil {
			return classify("insert anchors", err)
		}
	}
	return nil
}

// keepAnchorStates returns the anchors named, in order; an anchor the record
// already had keeps its state and last check, a new one starts unknown.
func keepAnchorStates(old []Anchor, names []string) []Anchor {
	out := make([]Anchor, len(names))
	for i, n := range names {
		out[i] = Anchor{Anchor: n, State: AnchorUnknown}
		for _, a := range old {
			if a.Anchor == n {
				out[i] = a
				break
			}
		}
	}
	return out
}

func anchorNames(as []Anchor) []string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = a.Anchor
	}
	return out
}

// CheckAnchor refuses, as Invalid naming field, an anchor that the anchor
// parser refuses: storage keeps only anchors in their stored form.
func CheckAnchor(field, a string) error {
	if _, err := anchor.Parse(a); err != nil {
		return errorf(Invalid, field, "%v", err)
	}
	return nil
}

// parseAnchors is CheckAnchor on each anchor of a list, naming "<field>[i]".
func parseAnchors(field string, as []screen.Text) error {
	for i, a := range as {
		if err := CheckAnchor(fmt.Sprintf("%s[%d]", field, i), a.String()); err != nil {
			return err
		}
	}
	return nil
}

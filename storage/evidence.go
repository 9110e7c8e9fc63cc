package storage

import (
	"context"
	"database/sql"

	"github.com/hearth-memory/hearth/storage/screen"
)

// Evidence stances (docs/design.md R-E1).
const (
	StanceCorroborates = "corroborates"
	StanceContradicts  = "contradicts"
)

// ValidStance reports whether s is an evidence stance.
func ValidStance(s string) bool { return s == StanceCorroborates || s == StanceContradicts }

// CheckStance refuses s unless it is an evidence stance: Invalid naming field.
func CheckStance(field, s string) error {
	if !ValidStance(s) {
		return errorf(Invalid, field, "must be %s or %s", StanceCorroborates, StanceContradicts)
	}
	return nil
}

// Evidence records client's stance on the record id, corroborates or
// contradicts, with an optional note, and returns the record with its
// evidence counts and effective confidence recomputed, its revision advanced
// and an audit row "evidence" written, all in one transaction (docs/design.md R-E1,
// R-E2).
//
// A client holds one stance per record: a later call replaces its earlier
// stance, and the stance takes its place in the arrival order at the time of
// the new call. Repeating the stance and note a client already gave changes
// nothing: the record comes back at the same revision and no row is written.
// The record's writer may give evidence too, but its corroboration does not
// count (its asserted confidence already says how sure it is), while its
// contradiction does; see witnessTx.
//
// It returns Invalid for an unknown stance (Field "stance"), an empty client
// (Field "client"), or a record that is superseded or deleted (Field "id"),
// and NotFound (Field "id") for an unknown record. A refusal writes nothing.
func (db *DB) Evidence(ctx context.Context, id, client, stance string, note screen.Text) (*Record, error) {
	if err := CheckStance("stance", stance); err != nil {
		return nil, err
	}
	if client == "" {
		return nil, errorf(Invalid, "client", "is required")
	}
	var rec *Record
	if err := db.writeGrouped(ctx, "evidence", func(tx *txn) (err error) {
		rec, err = evidenceTx(ctx, tx, id, client, stance, note)
		return err
	}); err != nil {
		return nil, err
	}
	return rec, nil
}

// evidenceTx records a validated stance inside the caller's transaction (an
// anchor report may carry evidence in its own) and returns the record as it
// now stands.
func evidenceTx(ctx context.Context, tx *txn, id, client, stance string, note screen.Text) (*Record, error) {
	cur, err := findRecordTx(ctx, tx, id)
	if err != nil {
		return nil, err
	}
	if !cur.Live() {
		return nil, errorf(Invalid, "id", "record is %s; evidence applies to active and candidate records", cur.Status)
	}
	var oldStance, oldNote string
	err = tx.QueryRowContext(ctx, `SELECT stance, note FROM evidence WHERE record_id = ? AND client = ?`,
		id, client).Scan(&oldStance, &oldNote)
	switch {
	case err == nil && oldStance == stance && oldNote == note.String():
		return cur, nil // said before: nothing to change
	case err != nil && err != sql.ErrNoRows:
		return nil, classify("evidence", err)
	}

	// Delete, then insert: the new row takes the next seq, so a replaced
	// stance moves to the end of the arrival order.
	if _, err := tx.ExecContext(ctx, `DELETE FROM evidence WHERE record_id = ? AND client = ?`, id, client); err != nil {
		return nil, classify("evidence", err)
	}
	if _, err := tx.ExecContext(ctx, `
		INSERT INTO evidence (record_id, client, stance, note, at) VALUES (?, ?, ?, ?, ?)`,
		id, client, stance, note.String(), tx.Now.UnixMilli(),
	); err != nil {
		return nil, classify("evidence", err)
	}
	w, err := witnessTx(ctx, tx, id, cur.Writer, cur.Confidence)
	if err != nil {
		return nil, err
	}
	if _, err := tx.ExecContext(ctx, `
		UPDATE records SET
			effective_confidence = ?, proof_count = ?, refutation_count = ?,
			revision = revision + 1, updated_at = ?
		WHERE id = ?`,
		w.effective, w.proofs, w.refutations, tx.Now.UnixMilli(), id,
	); err != nil {
		return nil, classify("evidence", err)
	}
	detail := stance
	if stance == StanceCorroborates && client == cur.Writer {
		detail += " (own record, not counted)"
	}
	if note.String() != "" {
		detail += ": " + note.String()
	}
	if err := insertAuditTx(ctx, tx, AuditEntry{
		Client: client, Action: ActionEvidence, Namespace: cur.Namespace, RecordID: id,
		Detail: screen.Redact(detail),
	}); err != nil {
		return nil, err
	}
	return findRecordTx(ctx, tx, id)
}

// witness is what a record's evidence derives.
type witness struct {
	effective           float64
	proofs, refutations int
}

// witnessTx derives the evidence counts and effective confidence of record
// id from its evidence rows, starting from the asserted confidence and
// applying each stance in arrival order: a corroboration closes a third of
// the remaining distance to 1, a contradiction halves what is left (docs/design.md
// R-E2). The writer's own corroboration is skipped: it already asserted its
// confidence, and counting it would let a client inflate its own record. Its
// contradiction counts, since retracting is honest. It is the one place the
// rule lives: Evidence and a change of asserted confidence both use it.
func witnessTx(ctx context.Context, tx *txn, id, writer string, asserted float64) (witness, error) {
	rows, err := tx.QueryContext(ctx, `SELECT client, stance FROM evidence WHERE record_id = ? ORDER BY seq`, id)
	if err != nil {
		return witness{}, classify("witness", err)
	}
	defer rows.Close()
	w := witness{effective: asserted}
	for rows.Next() {
		var client, stance string
		if err := rows.Scan(&client, &stance); err != nil {
			return witness{}, classify("witness", err)
		}
		switch {
		case stance == StanceContradicts:
			w.effective /= 2
			w.refutations++
		case client != writer:
			w.effective += (1 - w.effective) / 3
			w.proofs++
		}
	}
	return w, classify("witness", rows.Err())
}

package storage

import (
	"context"
	"time"

	"github.com/hearth-memory/hearth/storage/screen"
)

// DefaultAuditLimit is how many rows AuditLog returns when asked for none.
const DefaultAuditLimit = 100

// AuditEntry is one row of the append-only audit log (SPEC R-R7). Action is
// a short verb ("store", "update", "forget", "supersede", or a refusal such as
// "refuse-screen" chosen by the caller). Namespace and RecordID may be empty.
type AuditEntry struct {
	At        time.Time
	Client    string
	Action    string
	Namespace string
	RecordID  string
	Detail    screen.Text
}

// Audit appends e on its own, for events that change no record: refusals
// (auth, screen, conflict) and other notes. A zero At takes the clock's time.
// Mutations write their own audit rows; callers need not.
//
// It returns Invalid (Field "action") when Action is empty.
func (db *DB) Audit(ctx context.Context, e AuditEntry) error {
	if e.Action == "" {
		return errorf(Invalid, "action", "is required")
	}
	return db.write(ctx, "audit", func(tx *txn) error {
		return insertAuditTx(ctx, tx, e)
	})
}

// insertAuditTx appends e; a zero At becomes the transaction's time.
func insertAuditTx(ctx context.Context, tx *txn, e AuditEntry) error {
	at := tx.now
	if !e.At.IsZero() {
		at = e.At.UTC()
	}
	if _, err := tx.ExecContext(ctx, `
		INSERT INTO audit (at, client, action, namespace, record_id, detail)
		VALUES (?, ?, ?, ?, ?, ?)`,
		at.UnixMilli(), e.Client, e.Action, e.Namespace, e.RecordID, e.Detail.String(),
	); err != nil {
		return classify("audit", err)
	}
	return nil
}

// AuditLog returns the latest limit audit rows, newest (last appended)
// first. limit <= 0 means DefaultAuditLimit.
func (db *DB) AuditLog(ctx context.Context, limit int) ([]AuditEntry, error) {
	if limit <= 0 {
		limit = DefaultAuditLimit
	}
	var out []AuditEntry
	err := db.read(ctx, "audit log", func(tx *txn) (err error) {
		out, err = auditLogTx(ctx, tx, limit)
		return err
	})
	return out, err
}

func auditLogTx(ctx context.Context, tx *txn, limit int) ([]AuditEntry, error) {
	rows, err := tx.QueryContext(ctx, `
		SELECT at, client, action, namespace, record_id, detail
		FROM audit ORDER BY seq DESC LIMIT ?`, limit)
	if err != nil {
		return nil, classify("audit log", err)
	}
	defer rows.Close()
	var out []AuditEntry
	for rows.Next() {
		var (
			e      AuditEntry
			at     int64
			detail string
		)
		if err := rows.Scan(&at, &e.Client, &e.Action, &e.Namespace, &e.RecordID, &detail); err != nil {
			return nil, classify("audit log", err)
		}
		e.At = time.UnixMilli(at).UTC()
		// The row was screened when it was written.
		e.Detail = screen.Redact(detail)
		out = append(out, e)
	}
	return out, classify("audit log", rows.Err())
}

package storage

import (
	"context"

	"github.com/hearth-memory/hearth/storage/screen"
)

// Forget marks the record id deleted, advancing its revision, with reason in
// the audit row. A revision of 0 forgets whatever the current revision is.
// A record it superseded stays superseded. Deleted records stay in the table
// (and the full-text index) until purged, but search and timeline skip them.
//
// It returns NotFound (Field "id") for an unknown record, Conflict (with
// Current) when a non-zero revision is stale, and Invalid (Field "id") when
// the record is already deleted.
func (db *DB) Forget(ctx context.Context, id string, revision int, reason screen.Text, client string) (*Record, error) {
	var rec *Record
	if err := db.writeGrouped(ctx, "forget", func(tx *txn) (err error) {
		rec, err = forgetTx(ctx, tx, id, revision, reason, client)
		return err
	}); err != nil {
		return nil, err
	}
	return rec, nil
}

func forgetTx(ctx context.Context, tx *txn, id string, revision int, reason screen.Text, client string) (*Record, error) {
	cur, err := findRecordTx(ctx, tx, id)
	if err != nil {
		return nil, err
	}
	if revision != 0 && cur.Revision != revision {
		return nil, conflict(cur, revision)
	}
	if cur.Status == StatusDeleted {
		return nil, errorf(Invalid, "id", "record is already deleted")
	}
	if _, err := tx.ExecContext(ctx, `
		UPDATE records SET status = ?, revision = revision + 1, updated_at = ? WHERE id = ?`,
		StatusDeleted, tx.Now.UnixMilli(), id,
	); err != nil {
		return nil, classify("forget", err)
	}
	if err := insertAuditTx(ctx, tx, AuditEntry{
		Client: client, Action: ActionForget, Namespace: cur.Namespace, RecordID: id, Detail: reason,
	}); err != nil {
		return nil, err
	}
	return findRecordTx(ctx, tx, id)
}

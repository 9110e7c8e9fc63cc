package storage

import (
	"context"
	"fmt"
	"time"

	"github.com/hearth-memory/hearth/storage/internal/jobq"
	"github.com/hearth-memory/hearth/storage/screen"
)

// Maintenance is what one maintenance run does (docs/design.md R-J3, R-J4).
type Maintenance struct {
	// CandidateExpiry forgets candidates created at least this long ago;
	// 0 turns expiry off (candidate_expiry_days 0).
	CandidateExpiry time.Duration
	// Retention purges records forgotten at least this long ago, turns
	// receipts closed at least this long ago into tombstones, and deletes
	// jobs done and queries recorded that long ago (retention_deleted_days).
	// Required.
	Retention time.Duration
	// CaptureRetention forgets observation records (source capture) older
	// than this that no one fetched, cited or promoted, and purges capture's
	// events and facts of that age (capture_retention_days, capture.go); 0
	// keeps them.
	CaptureRetention time.Duration
	// AuditRetention deletes audit rows at least this old, but those of
	// records still held (their history), the usage-start row and the
	// newest backup row; 0 keeps the audit whole (audit_retention_days).
	// A run that deletes rows writes an audit row of its own saying how
	// many and up to when (ActionAuditPrune).
	AuditRetention time.Duration
}

// MaintenanceReport counts what a maintenance run did.
type MaintenanceReport struct {
	// CandidatesExpired is how many candidates were forgotten.
	CandidatesExpired int
	// RecordsPurged is how many forgotten records were deleted, with their
	// full-text rows, anchors, usage and evidence.
	RecordsPurged int
	// ReceiptsTombstoned is how many session receipts became tombstones.
	ReceiptsTombstoned int
	// JobsPurged is how many finished (done) jobs were deleted.
	JobsPurged int
	// AsksPurged is how many recorded queries were deleted, QuestionsPurged
	// how many questions went with their last ask (answers.go).
	AsksPurged, QuestionsPurged int
	// ObservationsExpired is how many observation records were forgotten.
	ObservationsExpired int
	// AuditPruned is how many audit rows were deleted (AuditRetention).
	AuditPruned int
	// ExtractionReceiptsPurged is how many extraction receipts were older
	// than retention and deleted.
	ExtractionReceiptsPurged int
}

// String gives the counts as the audit row's detail; the recorded queries
// and questions purged are named only when there were some.
func (r MaintenanceReport) String() string {
	s := fmt.Sprintf("candidates expired %d, records purged %d, receipts tombstoned %d, jobs purged %d",
		r.CandidatesExpired, r.RecordsPurged, r.ReceiptsTombstoned, r.JobsPurged)
	if r.AsksPurged+r.QuestionsPurged > 0 {
		s += fmt.Sprintf(", recorded queries purged %d, questions purged %d", r.AsksPurged, r.QuestionsPurged)
	}
	if r.ObservationsExpired > 0 {
		s += fmt.Sprintf(", observations expired %d", r.ObservationsExpired)
	}
	if r.AuditPruned > 0 {
		s += fmt.Sprintf(", audit rows pruned %d", r.AuditPruned)
	}
	if r.ExtractionReceiptsPurged > 0 {
		s += fmt.Sprintf(", extraction receipts purged %d", r.ExtractionReceiptsPurged)
	}
	return s
}

// Maintain runs maintenance in its own transaction. Job handlers use
// JobTx.Maintain, so the run commits with the job's completion.
//
// It returns Invalid when Retention is not positive (Field "retention") or
// CandidateExpiry is negative (Field "candidate_expiry").
func (db *DB) Maintain(ctx context.Context, m Maintenance) (*MaintenanceReport, error) {
	if err := m.validate(); err != nil {
		return nil, err
	}
	var rep *MaintenanceReport
	if err := db.writeGrouped(ctx, "maintain", func(tx *txn) (err error) {
		rep, err = maintainTx(ctx, tx, m)
		return err
	}); err != nil {
		return nil, err
	}
	return rep, nil
}

// Maintain runs maintenance, as DB.Maintain does, inside the transaction.
func (t *JobTx) Maintain(ctx context.Context, m Maintenance) (*MaintenanceReport, error) {
	if err := m.validate(); err != nil {
		return nil, err
	}
	return maintainTx(ctx, t.tx, m)
}

func (m *Maintenance) validate() error {
	switch {
	case m.Retention <= 0:
		return errorf(Invalid, "retention", "must be positive")
	case m.CandidateExpiry < 0:
		return errorf(Invalid, "candidate_expiry", "must not be negative")
	case m.CaptureRetention < 0:
		return errorf(Invalid, "capture_retention", "must not be negative")
	case m.AuditRetention < 0:
		return errorf(Invalid, "audit_retention", "must not be negative")
	}
	return nil
}

// maintainTx expires candidates, purges what retention allows and writes
// one audit row with the counts. Candidates forgotten here carry this run's
// time, so they are purged only by a run retention later.
func maintainTx(ctx context.Context, tx *txn, m Maintenance) (*MaintenanceReport, error) {
	var rep MaintenanceReport
	if m.CandidateExpiry > 0 {
		cutoff := tx.Now.Add(-m.CandidateExpiry).UnixMilli()
		ids, err := idsTx(ctx, tx, `SELECT id FROM records WHERE status = 'candidate' AND created_at <= ? ORDER BY id`, cutoff)
		if err != nil {
			return nil, err
		}
		days := int(m.CandidateExpiry / (24 * time.Hour))
		reason := screen.Redact(fmt.Sprintf("expired: a candidate older than %d days (candidate_expiry_days)", days))
		for _, id := range ids {
			if _, err := forgetTx(ctx, tx, id, 0, reason, SystemClient); err != nil {
				return nil, err
			}
		}
		rep.CandidatesExpired = len(ids)
	}

	if m.CaptureRetention > 0 {
		n, err := expireCaptureTx(ctx, tx, m.CaptureRetention)
		if err != nil {
			return nil, err
		}
		rep.ObservationsExpired = n
	}

	cutoff := tx.Now.Add(-m.Retention).UnixMilli()
	// Anchors, usage and evidence go by their foreign keys' ON DELETE
	// CASCADE and the full-text rows by the records_fts_delete trigger, all
	// in this transaction.
	res, err := tx.ExecContext(ctx, `DELETE FROM records WHERE status = 'deleted' AND updated_at <= ?`, cutoff)
	if err != nil {
		return nil, classify("purge records", err)
	}
	rep.RecordsPurged = rowsAffected(res)

	res, err = tx.ExecContext(ctx, `
		UPDATE receipts SET session_id = '', namespace = '', summary_id = '', summary_kept = 0,
			notes_refused = 0, notes_refused_pattern = '', job_id = '', tombstoned_at = ?
		WHERE tombstoned_at IS NULL AND closed_at <= ?`, tx.Now.UnixMilli(), cutoff)
	if err != nil {
		return nil, classify("tombstone receipts", err)
	}
	rep.ReceiptsTombstoned = rowsAffected(res)

	if rep.JobsPurged, err = jobq.PurgeDone(ctx, tx, tx.Now.Add(-m.Retention)); err != nil {
		return nil, err
	}

	if rep.AsksPurged, rep.QuestionsPurged, err = purgeAskedTx(ctx, tx, cutoff); err != nil {
		return nil, err
	}
	if m.AuditRetention > 0 {
		if rep.AuditPruned, err = pruneAuditTx(ctx, tx, tx.Now.Add(-m.AuditRetention), m.AuditRetention); err != nil {
			return nil, err
		}
	}

	res, err = tx.ExecContext(ctx, `DELETE FROM extraction_receipts WHERE created_at <= ?`, cutoff)
	if err != nil {
		return nil, classify("purge extraction receipts", err)
	}
	rep.ExtractionReceiptsPurged = rowsAffected(res)

	if err := insertAuditTx(ctx, tx, AuditEntry{
		Client: SystemClient, Action: ActionMaintenance, Detail: screen.Redact(rep.String()),
	}); err != nil {
		return nil, err
	}
	return &rep, nil
}

// idsTx returns the one-column string results of query.
func idsTx(ctx context.Context, tx *txn, query string, args ...any) ([]string, error) {
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, classify("select ids", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, classify("select ids", err)
		}
		out = append(out, id)
	}
	return out, classify("select ids", rows.Err())
}

// rowsAffected reads a result's row count; the driver always knows it.
func rowsAffected(res interface{ RowsAffected() (int64, error) }) int {
	n, _ := res.RowsAffected()
	return int(n)
}

// pruneAuditTx deletes the audit rows at or before cutoff but those of
// records still held, the usage-start rows and the newest backup row, and
// when it deleted any, writes one audit row saying how many and up to
// when. The cutoff is recorded in audit_prunes first: the audit's
// append-only trigger lets a row go only at or before such a cutoff
// (migration 0097).
func pruneAuditTx(ctx context.Context, tx *txn, cutoff time.Time, retention time.Duration) (int, error) {
	if _, err := tx.ExecContext(ctx, `INSERT INTO audit_prunes (at, cutoff) VALUES (?, ?)`,
		tx.Now.UnixMilli(), cutoff.UnixMilli()); err != nil {
		return 0, classify("prune audit", err)
	}
	res, err := tx.ExecContext(ctx, `
		DELETE FROM audit
		WHERE at <= ?1
			AND (record_id = '' OR NOT EXISTS (SELECT 1 FROM records WHERE id = audit.record_id))
			AND action <> ?2
			AND seq IS DISTINCT FROM (SELECT max(seq) FROM audit WHERE action = ?3)`,
		cutoff.UnixMilli(), string(ActionUsageStart), string(ActionBackup))
	if err != nil {
		return 0, classify("prune audit", err)
	}
	n := rowsAffected(res)
	if n == 0 {
		return 0, nil
	}
	return n, insertAuditTx(ctx, tx, AuditEntry{
		Client: SystemClient, Action: ActionAuditPrune, Detail: screen.Redact(fmt.Sprintf(
			"pruned %d audit rows up to %s UTC (audit_retention_days %d)",
			n, cutoff.UTC().Format("2006-01-02 15:04:05"), int(retention/(24*time.Hour)))),
	})
}

package storage

import (
	"context"
	"math"

	"github.com/hearth-memory/hearth/storage/screen"
)

// Audit actions of the model jobs: extraction (docs/design.md R-Z4) and the nightly
// review (docs/design.md R-J2). Like the actions in audit.go, their strings never
// change. A memory the model proposed that screens as a secret is audited as
// ActionRefuseScreen, by field and pattern.
const (
	// ActionExtract: an extraction job stored its candidates; the detail
	// counts what was kept and dropped, and names the server and model.
	ActionExtract Action = "extract"
	// ActionExtractDrop: a memory the model proposed was not stored; the
	// detail says which one and why (its type, a length, a repeat).
	ActionExtractDrop Action = "extract.drop"
	// ActionExtractRerun: an admin queued a receipt's extraction again
	// (memory_extraction_rerun); the detail names the receipt, the job and
	// the model.
	ActionExtractRerun Action = "extract.rerun"
	// ActionReview: a nightly review ran; the detail counts its verdicts.
	ActionReview Action = "review"
	// ActionReviewVerdict: a verdict on a candidate was applied (duplicate
	// or session-state: the candidate was forgotten; keep: it stays).
	ActionReviewVerdict Action = "review.verdict"
	// ActionReviewRefused: a guard refused the model's verdict; the
	// candidate stays. The detail is the verdict and the guard's reason.
	ActionReviewRefused Action = "review.refused"
	// ActionReviewFailed: the model call for a candidate failed; the
	// candidate stays. The detail is the failure.
	ActionReviewFailed Action = "review.failed"
)

// Record returns the record id as the transaction sees it, with its
// anchors. It returns NotFound (Field "id") for an unknown id.
func (t *JobTx) Record(ctx context.Context, id string) (*Record, error) {
	return findRecordTx(ctx, t.tx, id)
}

// Forget forgets a record as DB.Forget does, inside the transaction:
// revision, when not 0, must be the record's current one.
//
// It returns NotFound for an unknown id, Conflict for another revision and
// Invalid (Field "id") for a record already deleted.
func (t *JobTx) Forget(ctx context.Context, id string, revision int, reason screen.Text, client string) (*Record, error) {
	return forgetTx(ctx, t.tx, id, revision, reason, client)
}

// Audit appends e inside the transaction, as DB.Audit does.
//
// It returns Invalid (Field "action") when Action is empty.
func (t *JobTx) Audit(ctx context.Context, e AuditEntry) error {
	if e.Action == "" {
		return errorf(Invalid, "action", "is required")
	}
	return insertAuditTx(ctx, t.tx, e)
}

// Refuse appends the audit row of r inside the transaction, as DB.Refuse
// does.
//
// It returns Invalid (Field "action") when r.Action is not a refusal.
func (t *JobTx) Refuse(ctx context.Context, r RefusalEntry) error {
	return refuseTx(ctx, t.tx, r)
}

// Candidates returns up to limit live candidates, oldest first, with their
// anchors: what the nightly review reads. limit <= 0 means every one.
func (db *DB) Candidates(ctx context.Context, limit int) ([]*Record, error) {
	if limit <= 0 {
		limit = math.MaxInt32 // more than any store holds: PostgreSQL takes no -1
	}
	var recs []*Record
	err := db.read(ctx, "candidates", func(tx *txn) (err error) {
		recs, err = findRecordsTx(ctx, tx, `WHERE r.status = 'candidate' ORDER BY r.created_at, r.id LIMIT +?`, limit)
		return err
	})
	return recs, err
}

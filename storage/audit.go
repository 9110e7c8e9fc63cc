package storage

import (
	"context"

	"github.com/hearth-memory/hearth/storage/internal/audit"
)

// DefaultAuditLimit is how many rows AuditLog returns when asked for none.
const DefaultAuditLimit = audit.DefaultLimit

// SystemClient is the audit client of what Hearth does by itself: at start,
// and in maintenance runs.
const SystemClient = audit.SystemClient

// Action is the verb of an audit row. Hearth writes only the actions below
// (package audit says what each records); their strings are what
// memory_audit and the page show, so they never change.
type Action = audit.Action

// The audit actions.
const (
	ActionStore          = audit.Store
	ActionUpdate         = audit.Update
	ActionForget         = audit.Forget
	ActionSupersede      = audit.Supersede
	ActionEvidence       = audit.Evidence
	ActionSessionClose   = audit.SessionClose
	ActionMaintenance    = audit.Maintenance
	ActionRename         = audit.Rename
	ActionUsageStart     = audit.UsageStart
	ActionAnchor         = audit.Anchor
	ActionBackup         = audit.Backup
	ActionImport         = audit.Import
	ActionTokenGenerate  = audit.TokenGenerate
	ActionTokenRotate    = audit.TokenRotate
	ActionIntegrity      = audit.Integrity
	ActionRepair         = audit.Repair
	ActionAuditPrune     = audit.Prune
	ActionQuestionAdd    = audit.QuestionAdd
	ActionRefuseAuth     = audit.RefuseAuth
	ActionRefuseScreen   = audit.RefuseScreen
	ActionRefuseConflict = audit.RefuseConflict
	ActionRefuseExpired  = audit.RefuseExpired
	ActionRefuseDiskFull = audit.RefuseDiskFull
)

// AuditEntry is one row of the append-only audit log (docs/design.md R-R7).
// Namespace and RecordID may be empty.
type AuditEntry = audit.Entry

// Audit appends e in a transaction of its own, for an event that changes no
// record. A zero At takes the clock's time. Mutations write their own audit
// rows, and refusals go through Refuse, which words their detail; callers
// need neither.
//
// It returns Invalid (Field "action") when Action is empty.
func (db *DB) Audit(ctx context.Context, e AuditEntry) error {
	if e.Action == "" {
		return errorf(Invalid, "action", "is required")
	}
	return db.writeGrouped(ctx, opAudit, func(tx *txn) error {
		return insertAuditTx(ctx, tx, e)
	})
}

// RefusalEntry is a request Hearth refused, as the audit records it
// (docs/design.md R-R7, R-S2): who was refused, by which rule and why,
// never the refused value. Every refusal row is written through Refuse or
// refuseTx.
type RefusalEntry = audit.Refusal

// Refuse appends the audit row of r in a transaction of its own.
//
// It returns Invalid (Field "action") when r.Action is not a refusal.
func (db *DB) Refuse(ctx context.Context, r RefusalEntry) error {
	e, err := r.Entry()
	if err != nil {
		return lift(err)
	}
	return db.writeGrouped(ctx, opRefuse, func(tx *txn) error {
		return insertAuditTx(ctx, tx, e)
	})
}

// refuseTx appends the audit row of r inside the caller's transaction, for
// a refusal that is part of a request that goes on (a close whose notes were
// refused).
func refuseTx(ctx context.Context, tx *txn, r RefusalEntry) error {
	e, err := r.Entry()
	if err != nil {
		return err
	}
	return insertAuditTx(ctx, tx, e)
}

// insertAuditTx appends e in the caller's transaction (audit.Insert); a
// zero At becomes the transaction's time.
func insertAuditTx(ctx context.Context, tx *txn, e AuditEntry) error {
	return audit.Insert(ctx, tx, e)
}

// AuditLog returns the latest limit audit rows, newest (last appended)
// first. limit <= 0 means DefaultAuditLimit.
func (db *DB) AuditLog(ctx context.Context, limit int) ([]AuditEntry, error) {
	if limit <= 0 {
		limit = DefaultAuditLimit
	}
	var out []AuditEntry
	err := db.read(ctx, "audit log", func(tx *txn) (err error) {
		out, err = audit.Log(ctx, tx, limit)
		return err
	})
	return out, err
}

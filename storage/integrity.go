package storage

import (
	"context"

	"github.com/hearth-memory/hearth/storage/screen"
)

// Integrity (issue #21): the engine checks the whole file and repairs
// the full-text index where that is all that is wrong (package engine,
// integrity.go); the store audits what it repaired and, at night, the
// outcome. Damage is written nowhere: nothing is written to a damaged file.

// CheckIntegrity checks the whole file as opening does, repairs the
// full-text index if that is all that is wrong, and returns the outcome.
// Damage it cannot repair makes the store read-only from then on. The
// structural check runs on a read snapshot beside the writer; the index
// check and any repair hold the writer. Repairs are audited, and so is the
// outcome when the file is sound; damage is not written anywhere: nothing
// is written to a damaged file. Once the store is read-only it returns the
// damage found before without checking again.
func (db *DB) CheckIntegrity(ctx context.Context) (*IntegrityCheck, error) {
	return db.checkWhole(ctx, true)
}

// CheckDeferred runs the check Open left for later (CheckLater) as
// CheckIntegrity does, but audits only a repair, as the check while
// opening does, not the outcome. When Open checked the file itself, it
// returns that check and checks nothing.
func (db *DB) CheckDeferred(ctx context.Context) (*IntegrityCheck, error) {
	if c, ok := db.LastIntegrityCheck(); ok {
		return &c, nil
	}
	return db.checkWhole(ctx, false)
}

// checkWhole is CheckIntegrity; auditSound says whether the outcome is
// audited besides a repair.
func (db *DB) checkWhole(ctx context.Context, auditSound bool) (*IntegrityCheck, error) {
	if db.lite == nil {
		return nil, notApplicable("the integrity check", "the server checks its own pages (data checksums, amcheck)")
	}
	chk, err := db.lite.CheckIntegrity(ctx)
	if err != nil {
		return nil, lift(err)
	}
	if chk.Damage != nil {
		return chk, nil
	}
	if chk.Repaired != "" {
		if err := db.Audit(ctx, AuditEntry{Client: SystemClient, Action: ActionRepair, Detail: screen.Redact(chk.Repaired)}); err != nil {
			return chk, err
		}
	}
	if !auditSound {
		return chk, nil
	}
	return chk, db.Audit(ctx, AuditEntry{Client: SystemClient, Action: ActionIntegrity, Detail: screen.Redact(chk.String())})
}

// auditOpenRepairs writes the audit row of a repair made while opening.
func (db *DB) auditOpenRepairs(ctx context.Context) error {
	if db.lite == nil {
		return nil
	}
	r := db.lite.OpenRepairs()
	if r == "" {
		return nil
	}
	return db.Audit(ctx, AuditEntry{Client: SystemClient, Action: ActionRepair, Detail: screen.Redact(r)})
}

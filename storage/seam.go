package storage

import (
	"context"
	"errors"
	"time"

	"github.com/hearth-memory/hearth/storage/internal/engine"
	"github.com/hearth-memory/hearth/storage/internal/errs"
)

// engineOps is all the record domain asks of its engine (docs/design.md,
// "Storage layout"): a second engine implements these and nothing more.
// Every write is a function of a transaction whose time is fixed (txn.Now);
// the engine decides how writes share commits.
type engineOps interface {
	// Write runs fn in a write transaction grouped with other callers'
	// (each under its own savepoint) and commits; op names it in errors.
	Write(ctx context.Context, op string, fn func(tx *txn) error) error
	// WriteSolo is Write for a fn that changes many pages: a transaction
	// of its own, never grouped.
	WriteSolo(ctx context.Context, op string, fn func(tx *txn) error) error
	// Read runs fn in a read-only transaction: one snapshot.
	Read(ctx context.Context, op string, fn func(tx *txn) error) error
	// Gen counts the commits that may have changed the full-text index.
	Gen() uint64
}

var _ engineOps = (*engine.Engine)(nil)

// txn is a transaction of the engine with its time fixed (Now) and its
// statements cached.
type txn = engine.Tx

// writeGrouped runs fn through the engine's grouped write (engineOps.Write):
// its transaction may hold other callers' writes, each under its own
// savepoint. fn keeps the engine's contract (engine.Engine.Write): it never
// ends tx nor keeps it, gives its results through variables it assigns,
// and takes its time from tx.Now.
func (db *DB) writeGrouped(ctx context.Context, op string, fn func(tx *txn) error) error {
	return lift(db.eng.Write(ctx, op, fn))
}

// writeOwnTx is writeGrouped in a transaction of its own, never grouped
// (engineOps.WriteSolo): for a fn that changes many pages.
func (db *DB) writeOwnTx(ctx context.Context, op string, fn func(tx *txn) error) error {
	return lift(db.eng.WriteSolo(ctx, op, fn))
}

// read runs fn on one read snapshot (engineOps.Read).
func (db *DB) read(ctx context.Context, op string, fn func(tx *txn) error) error {
	return lift(db.eng.Read(ctx, op, fn))
}

// lift gives an error the engine refused with (*errs.Error: a full disk,
// a damaged file, a bad argument) as storage's own Error, with its code;
// any other error is left as it is.
func lift(err error) error {
	var e *errs.Error
	if err == nil || !errors.As(err, &e) {
		return err
	}
	return &Error{Code: e.Code, Field: e.Field, Message: e.Message}
}

// What the engine reports of the file, under the names the store has
// always given them.
type (
	// Damage is what an integrity check found wrong and could not repair.
	Damage = engine.Damage
	// IntegrityCheck is the outcome of one check of the database file.
	IntegrityCheck = engine.IntegrityCheck
	// DiskFull is the current full-disk episode, as status reports it.
	DiskFull = engine.DiskFull
	// DiskSpace is the space of the file system that holds the database.
	DiskSpace = engine.DiskSpace
	// CheckpointStats are the figures of the checkpoint policy since open.
	CheckpointStats = engine.CheckpointStats
	// SchemaError says how a database's schema differs from the one its
	// migrations create.
	SchemaError = engine.SchemaError
	// BackupInfo describes a verified copy of the database.
	BackupInfo = engine.BackupInfo
	// RestoreInfo describes a restore.
	RestoreInfo = engine.RestoreInfo
	// Lock is an exclusive hold on a database file.
	Lock = engine.Lock
)

var (
	// ErrClosed is returned by a write after Close.
	ErrClosed = engine.ErrClosed
	// ErrLocked means another process holds the database: a running
	// server, or a restore in progress.
	ErrLocked = engine.ErrLocked
)

// LockPath returns the lock file of the database at path.
func LockPath(path string) string { return engine.LockPath(path) }

// AcquireLock takes the lock of the database at path without waiting. It
// returns an error wrapping ErrLocked when another process holds it.
func AcquireLock(path string) (*Lock, error) { return engine.AcquireLock(path) }

// FormatBytes writes n in binary units, e.g. 512 B, 3.2 MiB, 41.0 GiB.
func FormatBytes(n uint64) string { return engine.FormatBytes(n) }

// WritesWaiting returns how many writes wait for the writer loop to take
// them: the queue in front of the single writer.
// On PostgreSQL, where every write is a transaction of its own, none.
func (db *DB) WritesWaiting() int64 {
	if db.lite == nil {
		return 0
	}
	return db.lite.WritesWaiting()
}

// GroupStats returns how many transactions the writer loop has committed
// since open and how many writes they held: writes/groups is how many
// writes a commit serves. On PostgreSQL, no groups.
func (db *DB) GroupStats() (groups, writes int64) {
	if db.lite == nil {
		return 0, 0
	}
	return db.lite.GroupStats()
}

// CheckpointStats returns the checkpoint policy's figures: none on
// PostgreSQL, whose checkpoints are the server's.
func (db *DB) CheckpointStats() CheckpointStats {
	if db.lite == nil {
		return CheckpointStats{}
	}
	return db.lite.CheckpointStats()
}

// DiskFull returns the current episode; ok is false while the disk is not
// known to be full, as it always is on PostgreSQL: the server's disk is
// not this process's to watch, and a write it refuses for a full disk is
// Full all the same.
func (db *DB) DiskFull() (d DiskFull, ok bool) {
	if db.lite == nil {
		return DiskFull{}, false
	}
	return db.lite.DiskFull()
}

// DiskSpace returns the space of the file system holding the database and
// its WAL; unknown (Known false) on PostgreSQL.
func (db *DB) DiskSpace() DiskSpace {
	if db.lite == nil {
		return DiskSpace{}
	}
	return db.lite.DiskSpace()
}

// Damage returns the damage that keeps the store read-only, or nil; always
// nil on PostgreSQL, whose integrity is the server's.
func (db *DB) Damage() *Damage {
	if db.lite == nil {
		return nil
	}
	return db.lite.Damage()
}

// LastIntegrityCheck returns the latest check, at open or nightly; ok is
// false before the first, and always on PostgreSQL.
func (db *DB) LastIntegrityCheck() (c IntegrityCheck, ok bool) {
	if db.lite == nil {
		return IntegrityCheck{}, false
	}
	return db.lite.LastIntegrityCheck()
}

// now reads the clock once, in UTC and at the millisecond precision rows keep.
func (db *DB) now() time.Time {
	return db.Now().UTC().Truncate(time.Millisecond)
}

package storage

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"time"

	"github.com/hearth-memory/hearth/storage/internal/engine"
	"github.com/hearth-memory/hearth/storage/internal/sqlval"
	"github.com/hearth-memory/hearth/storage/screen"
)

// Backup writes a consistent copy of the database to dst while writes go
// on, and verifies it (Verify) before it reports success.
//
// The copy is SQLite's online backup of the database, made in one step on
// one read connection: it is the snapshot of a single read transaction, as
// of its start, and the writer keeps committing meanwhile (WAL). It is
// written to dst.tmp, switched to a rollback journal so that it is one
// self-contained file, checked, synced and only then renamed to dst; dst's
// folder is created (0700) when missing. client names who asked, for the
// audit row "backup" written once the copy stands.
//
// It returns Invalid (Field "out") when dst exists, and an internal error
// when the copy or a check fails; then no dst is left behind.
func (db *DB) Backup(ctx context.Context, dst, client string) (*BackupInfo, error) {
	if db.lite == nil {
		return nil, notApplicable("backup", "pg_dump or the server's own tools back it up (docs/postgres.md)")
	}
	info, err := db.lite.Backup(ctx, dst)
	if err != nil {
		return nil, lift(err)
	}
	if err := db.writeGrouped(ctx, "backup audit", func(tx *txn) error {
		return insertAuditTx(ctx, tx, AuditEntry{
			Client: client, Action: ActionBackup,
			Detail: screen.Redact(fmt.Sprintf("%s: %d records, %d bytes", filepath.Base(info.Path), info.Records, info.Bytes)),
		})
	}); err != nil {
		return nil, err
	}
	return info, nil
}

// LastBackup returns when the newest backup this database made (through
// Backup) was taken; ok is false when there was none.
func (db *DB) LastBackup(ctx context.Context) (at time.Time, ok bool, err error) {
	err = db.read(ctx, "last backup", func(tx *txn) error {
		var v sql.NullInt64
		if err := tx.QueryRowContext(ctx, `SELECT MAX(at) FROM audit WHERE action = ?`, string(ActionBackup)).Scan(&v); err != nil {
			return classify("last backup", err)
		}
		at, ok = sqlval.Time(v), v.Valid
		return nil
	})
	return at, ok, err
}

// BackupFile copies the database file src, which no server needs to hold,
// to dst exactly as Backup does, without the audit row: src's content is
// only read and it is not migrated (a WAL a crash left behind is read as
// the next start would, and closing may checkpoint it into src, as any
// last connection does). A server that starts meanwhile is not disturbed.
func BackupFile(ctx context.Context, src, dst string) (*BackupInfo, error) {
	info, err := engine.BackupFile(ctx, src, dst, schemaFuncs)
	return info, lift(err)
}

// Verify checks that the file is a sound Hearth database: SQLite's
// integrity_check and foreign_key_check find nothing, the full-text index
// passes FTS5's integrity-check against the records table, and every
// migration it records is one this build knows (a copy made by a newer
// Hearth is refused). It returns the number of records. It opens the file
// read-write, as the checks need, but changes nothing in it.
func Verify(ctx context.Context, file string) (records int, err error) {
	return engine.Verify(ctx, file, schemaFuncs)
}

// Restore replaces the database at path with a copy of the file from, for
// a server that is not running. It takes the database's Lock first and
// fails with an error wrapping ErrLocked while a server (or another
// restore) holds it. The copy is verified (Verify) before anything is
// replaced; then the current database file and its -wal and -shm files are
// moved into the folder aside (created 0700; they stay a consistent set)
// and the copy takes their place. Nothing is migrated here: the next Open
// applies the migrations the restored copy lacks.
func Restore(ctx context.Context, path, from, aside string) (*RestoreInfo, error) {
	return engine.Restore(ctx, path, from, aside, schemaFuncs)
}

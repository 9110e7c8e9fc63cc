package engine

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ncruces/go-sqlite3"
	"github.com/ncruces/go-sqlite3/driver"
	"github.com/ncruces/go-sqlite3/ext/fts5"

	"github.com/hearth-memory/hearth/storage/fileio"
	"github.com/hearth-memory/hearth/storage/internal/errs"
)

// BackupInfo describes a verified copy of the database.
type BackupInfo struct {
	// Path is the copy's absolute path.
	Path string
	// Bytes is its size; Records counts its records, every status included.
	Bytes   int64
	Records int
	// At is when the copy's snapshot was taken; Took how long the copy and
	// its checks took.
	At   time.Time
	Took time.Duration
}

// Backup writes a consistent copy of the database to dst while writes go
// on, and verifies it (Verify) before it reports success: SQLite's online
// backup, in one step on one read connection, so the copy is the snapshot
// of a single read transaction; the writer keeps committing meanwhile. It
// returns Invalid (Field "out") when dst exists.
func (e *Engine) Backup(ctx context.Context, dst string) (*BackupInfo, error) {
	return backupFrom(ctx, e.reader, e.now, e.cfg.schemaFuncs, dst)
}

// BackupFile copies the database file src, which no server needs to hold,
// to dst exactly as Backup does, without the audit row: src's content is
// only read and it is not migrated (a WAL a crash left behind is read as
// the next start would, and closing may checkpoint it into src, as any
// last connection does). A server that starts meanwhile is not disturbed.
// funcs registers what the migrations need (Config.Funcs and Writer), for
// the schema check.
func BackupFile(ctx context.Context, src, dst string, funcs func(*sqlite3.Conn) error) (*BackupInfo, error) {
	abs, err := filepath.Abs(src)
	if err != nil {
		return nil, fmt.Errorf("storage: backup: %w", err)
	}
	if _, err := os.Stat(abs); err != nil {
		return nil, fmt.Errorf("storage: backup: %w", err)
	}
	// Query-only: the source is read, never written (recovering a WAL left
	// by a crash touches only the shared-memory index).
	pool, err := driver.Open(dsn(abs, "deferred", []string{"busy_timeout(5000)", "query_only(1)"}), fts5.Register)
	if err != nil {
		return nil, fmt.Errorf("storage: backup: %w", err)
	}
	defer pool.Close()
	pool.SetMaxOpenConns(1)
	return backupFrom(ctx, pool, func() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }, funcs, dst)
}

// backupFrom copies the main database of a connection of pool to dst and
// verifies the copy.
func backupFrom(ctx context.Context, pool *sql.DB, now func() time.Time, funcs func(*sqlite3.Conn) error, dst string) (info *BackupInfo, err error) {
	start := time.Now()
	abs, err := filepath.Abs(dst)
	if err != nil {
		return nil, fmt.Errorf("storage: backup: %w", err)
	}
	if _, err := os.Lstat(abs); err == nil {
		return nil, errs.Errorf(errs.Invalid, "out", "%s exists; a backup never overwrites a file", abs)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return nil, fmt.Errorf("storage: backup: %w", err)
	}
	tmp := abs + ".tmp"
	removeDB(tmp) // a copy an earlier run left half-written
	defer func() {
		if err != nil {
			removeDB(tmp)
		}
	}()
	// The copy is private from its first byte, like the database.
	if err := os.WriteFile(tmp, nil, 0o600); err != nil {
		return nil, fmt.Errorf("storage: backup: %w", err)
	}
	conn, err := pool.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("storage: backup: %w", err)
	}
	at := now()
	err = conn.Raw(func(dc any) error {
		c := dc.(driver.Conn).Raw()
		old := c.SetInterrupt(ctx)
		defer c.SetInterrupt(old)
		// One step (-1): the whole copy under one read lock, so no write
		// by another connection can restart it.
		return c.Backup("main", fileURI(tmp))
	})
	conn.Close()
	if err != nil {
		return nil, fmt.Errorf("storage: backup: copy: %w", err)
	}
	records, err := verify(ctx, tmp, "delete", funcs)
	if err != nil {
		return nil, err
	}
	if err := syncFile(tmp); err != nil {
		return nil, fmt.Errorf("storage: backup: %w", err)
	}
	if err := os.Rename(tmp, abs); err != nil {
		return nil, fmt.Errorf("storage: backup: %w", err)
	}
	if err := syncDir(filepath.Dir(abs)); err != nil {
		return nil, fmt.Errorf("storage: backup: %w", err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("storage: backup: %w", err)
	}
	return &BackupInfo{Path: abs, Bytes: fi.Size(), Records: records, At: at, Took: time.Since(start)}, nil
}

// Verify checks that the file is a sound Hearth database: SQLite's
// integrity_check and foreign_key_check find nothing, the full-text index
// passes FTS5's integrity-check against the records table, and every
// migration it records is one this build knows (a copy made by a newer
// Hearth is refused). It returns the number of records. It opens the file
// read-write, as the checks need, but changes nothing in it.
// funcs registers what the migrations need (Config.Funcs and Writer), for
// the schema check.
func Verify(ctx context.Context, file string, funcs func(*sqlite3.Conn) error) (records int, err error) {
	return verify(ctx, file, "", funcs)
}

// verify runs Verify's checks on file, first switching it to journal mode
// (e.g. "delete") unless that is "".
func verify(ctx context.Context, file, journal string, funcs func(*sqlite3.Conn) error) (records int, err error) {
	pragmas := []string{"busy_timeout(5000)"}
	if journal != "" {
		pragmas = append(pragmas, "journal_mode("+journal+")")
	}
	pool, err := driver.Open(dsn(file, "deferred", pragmas), fts5.Register)
	if err != nil {
		return 0, fmt.Errorf("storage: verify: %w", err)
	}
	defer pool.Close()
	pool.SetMaxOpenConns(1)

	var problems []string
	rows, err := pool.QueryContext(ctx, `PRAGMA integrity_check(20)`)
	if err != nil {
		return 0, verifyError(err)
	}
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			rows.Close()
			return 0, verifyError(err)
		}
		if s != "ok" {
			problems = append(problems, s)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, verifyError(err)
	}
	if len(problems) > 0 {
		return 0, fmt.Errorf("storage: verify: integrity_check: %s", strings.Join(problems, "; "))
	}
	applied, err := appliedMigrations(ctx, pool)
	if err != nil {
		return 0, verifyError(err)
	}
	if len(applied) == 0 {
		return 0, fmt.Errorf("storage: verify: not a Hearth database: no migrations applied")
	}
	// Before the checks below write (the full-text one does): the schema is
	// the one its migrations create, with nothing added that could fire.
	if err := checkSchema(ctx, pool, funcs); err != nil {
		return 0, fmt.Errorf("storage: verify: %w", err)
	}
	var fk sql.NullString
	if err := pool.QueryRowContext(ctx, `PRAGMA foreign_key_check`).Scan(&fk, new(any), new(any), new(any)); err == nil {
		return 0, fmt.Errorf("storage: verify: foreign_key_check: a row of %s names a missing parent", fk.String)
	} else if !errors.Is(err, sql.ErrNoRows) {
		return 0, verifyError(err)
	}
	// rank 1: also compare the index with the records it was built from.
	if _, err := pool.ExecContext(ctx, `INSERT INTO records_fts (records_fts, rank) VALUES ('integrity-check', 1)`); err != nil {
		return 0, fmt.Errorf("storage: verify: full-text index: %w", err)
	}
	if err := pool.QueryRowContext(ctx, `SELECT COUNT(*) FROM records`).Scan(&records); err != nil {
		return 0, verifyError(err)
	}
	return records, nil
}

func verifyError(err error) error {
	if errors.Is(err, sqlite3.NOTADB) || errors.Is(err, sqlite3.CORRUPT) {
		return fmt.Errorf("storage: verify: not a sound SQLite database: %w", err)
	}
	return fmt.Errorf("storage: verify: %w", err)
}

// RestoreInfo describes a restore.
type RestoreInfo struct {
	// Records is the restored database's record count.
	Records int
	// Aside is the folder the files it replaced were moved to, or "" when
	// there were none.
	Aside string
}

// Restore replaces the database at path with a copy of the file from, for
// a server that is not running. It takes the database's Lock first and
// fails with an error wrapping ErrLocked while a server (or another
// restore) holds it. The copy is verified (Verify) before anything is
// replaced; then the current database file and its -wal and -shm files are
// moved into the folder aside (created 0700; they stay a consistent set)
// and the copy takes their place. Nothing is migrated here: the next Open
// applies the migrations the restored copy lacks.
// funcs registers what the migrations need, for the schema check.
func Restore(ctx context.Context, path, from, aside string, funcs func(*sqlite3.Conn) error) (*RestoreInfo, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("storage: restore: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return nil, fmt.Errorf("storage: restore: %w", err)
	}
	lock, err := AcquireLock(abs)
	if err != nil {
		return nil, err
	}
	defer lock.Release()

	tmp := abs + ".restore"
	removeDB(tmp)
	if err := fileio.Copy(from, tmp); err != nil {
		removeDB(tmp)
		return nil, fmt.Errorf("storage: restore: %w", err)
	}
	records, err := verify(ctx, tmp, "delete", funcs)
	if err != nil {
		removeDB(tmp)
		return nil, err
	}
	if err := syncFile(tmp); err != nil {
		removeDB(tmp)
		return nil, fmt.Errorf("storage: restore: %w", err)
	}
	info := &RestoreInfo{Records: records}
	var moved []string
	for _, suffix := range []string{"", "-wal", "-shm"} {
		p := abs + suffix
		if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if info.Aside == "" {
			if err := os.MkdirAll(aside, 0o700); err != nil {
				removeDB(tmp)
				return nil, fmt.Errorf("storage: restore: %w", err)
			}
			info.Aside = aside
		}
		if err := os.Rename(p, filepath.Join(aside, filepath.Base(p))); err != nil {
			// Put back what moved: the data directory stays as it was.
			for _, m := range moved {
				os.Rename(filepath.Join(aside, filepath.Base(m)), m)
			}
			removeDB(tmp)
			return nil, fmt.Errorf("storage: restore: set aside %s: %w", p, err)
		}
		moved = append(moved, p)
	}
	if err := os.Rename(tmp, abs); err != nil {
		for _, m := range moved {
			os.Rename(filepath.Join(aside, filepath.Base(m)), m)
		}
		removeDB(tmp)
		return nil, fmt.Errorf("storage: restore: %w", err)
	}
	if err := syncDir(filepath.Dir(abs)); err != nil {
		return nil, fmt.Errorf("storage: restore: %w", err)
	}
	return info, nil
}

// fileURI is the file: URI of path, for a raw connection.
func fileURI(path string) string {
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(path)}
	return u.String()
}

// removeDB removes a database file with its -wal, -shm and -journal files.
func removeDB(p string) {
	for _, suffix := range []string{"", "-wal", "-shm", "-journal"} {
		os.Remove(p + suffix)
	}
}

func syncFile(p string) error {
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// syncDir makes a rename in dir durable. Some systems cannot sync a
// directory; that is not an error there.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) && !errors.Is(err, errors.ErrUnsupported) {
		return err
	}
	return nil
}

// Package storage is Hearth's single-writer SQLite store: records with their
// anchors, topics and supersession links, full-text search (FTS5), usage
// counters, the append-only audit log and client token hashes.
//
// One writer connection, whose transactions begin IMMEDIATE, runs every
// mutation; a pool of query-only connections serves reads from WAL snapshots.
// A mutation, the reads it depends on, its audit row and its full-text index
// update commit in one transaction. Write methods take free text only as
// screen.Text, so nothing reaches disk without passing the screen.
//
// Errors that callers can act on are *Error values with a Code; ErrorCode
// classifies any error, and everything else counts as Internal.
package storage

import (
	"context"
	"crypto/rand"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ncruces/go-sqlite3/driver"
	"github.com/oklog/ulid/v2"

	"github.com/hearth-memory/hearth/storage/fulltext"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// Connection pragmas. busy_timeout comes first so that every later pragma
// already waits for locks instead of failing with SQLITE_BUSY.
var (
	writerPragmas = []string{
		"busy_timeout(5000)",
		"journal_mode(wal)",
		"synchronous(normal)",
		"foreign_keys(on)",
	}
	// Readers never write: query_only makes that a property of the
	// connection, so read transactions need not toggle it. Each keeps a
	// page cache of readerCacheKiB rather than SQLite's 2 MiB: a store's
	// resident memory grows with its connections' caches, and a reader's
	// pages are in the operating system's cache anyway (docs/operations.md,
	// "Memory").
	readerPragmas = []string{
		"busy_timeout(5000)",
		"journal_mode(wal)",
		"foreign_keys(on)",
		"query_only(1)",
		fmt.Sprintf("cache_size(%d)", -readerCacheKiB),
	}
	// The background checkpoint writes pages of the database file but
	// never a row; it needs no foreign keys.
	checkpointerPragmas = []string{
		"busy_timeout(5000)",
		"journal_mode(wal)",
	}
)

// readerCacheKiB is the page cache of each read connection, in KiB.
const readerCacheKiB = 512

// DB is the store: one writer connection and a pool of readers over one
// SQLite file. It is safe for concurrent use.
type DB struct {
	path   string
	lock   *Lock
	writer *sql.DB
	reader *sql.DB
	// Prepared statements of each pool (stmtcache.go).
	writerStmts, readerStmts *stmtCache

	// Now is the clock. It is read once per transaction, so every row a
	// mutation writes carries the same time. Tests may replace it before use.
	Now func() time.Time

	idMu    sync.Mutex
	entropy *ulid.MonotonicEntropy
	lastMS  uint64 // time part of the last id made, so ids never go backwards

	// sessionKey keys the digest a recorded search keeps of its session
	// (sessiondigest.go).
	sessionKey []byte

	// The writer loop (tx.go): writes waits for it, closing stops it,
	// loopDone says it has stopped; nil loopDone means it never started.
	writes    chan *writeRequest
	closing   chan struct{}
	loopDone  chan struct{}
	closeOnce sync.Once
	ckptOnce  sync.Once
	waiting   atomic.Int64
	// groups and grouped count the groups the loop committed and the
	// writes they held (GroupStats); tidied, the idle writer's merge
	// steps (tidyIndex).
	groups, grouped atomic.Int64
	tidied          atomic.Int64

	// uses holds counted uses until flushLoop stores them (usagebuf.go);
	// flushStop stops flushLoop, flushDone says it has stopped.
	uses      *usageBuffer
	flushStop chan struct{}
	flushDone chan struct{}

	// gen counts commits that may have changed the full-text index; dfs
	// caches document frequencies for one generation, counted on vocab, a
	// pool of its own; stems, the index tokens of query words hearth_rank
	// learned (rank.go).
	gen   atomic.Uint64
	dfs   dfCache
	stems fulltext.StemCache
	vocab *sql.DB
	// nsKeys caches the namespaces' full-text keys (search.go).
	nsKeys nsKeyCache
	// lean is the share of the rows the lean ranking looked up that it
	// kept (search.go).
	lean leanShare

	// asks are recorded queries waiting for the writer (asked.go).
	asks askQueue

	// Faults (issue #21): vfs names the SQLite VFS (vfs.go); full
	// is the current full-disk episode (diskfull.go); damaged, once set,
	// makes the store read-only (integrity.go); checks keeps the last
	// integrity check, wal the checkpoint policy and readers the reads in
	// progress, which a checkpoint may hold back (checkpoint.go).
	vfs     string
	full    *fullState
	damaged atomic.Pointer[Damage]
	checks  checkState
	wal     walPolicy
	readers readGate
	ckpt    checkpointer
	// checkLater leaves the whole-file check to CheckIntegrity after
	// the start (CheckLater).
	checkLater bool
}

// Option changes how Open opens the store.
type Option func(*DB)

// WithVFS opens the database through the SQLite VFS registered as name
// instead of the operating system's: a test seam (package faultvfs).
func WithVFS(name string) Option { return func(db *DB) { db.vfs = name } }

// CheckLater opens a file that needs no migration without checking it
// whole: its header, schema and migrations are checked as always, but
// PRAGMA quick_check and the full-text index's check, which read every
// page, are left to the caller, who runs CheckIntegrity once it serves
// (docs/operations.md, "Start-up"). A new file, one that needs a
// migration, or one whose opening meets a damaged page is checked whole
// before Open returns, as without the option.
func CheckLater() Option { return func(db *DB) { db.checkLater = true } }

// Open opens (creating if needed) the database at path, with its parent
// directory, checks that it runs in WAL mode and applies pending migrations.
// It holds the database's Lock until Close: while one DB is open, another
// Open of the same file, in this process or another, fails with an error
// wrapping ErrLocked. Its errors are internal, but for an empty path
// (Invalid).
func Open(ctx context.Context, path string, opts ...Option) (*DB, error) {
	if path == "" {
		return nil, errorf(Invalid, "path", "is required")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("storage: open: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return nil, fmt.Errorf("storage: open: %w", err)
	}
	warmSchema()
	lock, err := AcquireLock(abs)
	if err != nil {
		return nil, err
	}
	if err := private(abs); err != nil {
		lock.Release()
		return nil, fmt.Errorf("storage: open: %w", err)
	}
	db := &DB{
		path:      abs,
		Now:       time.Now,
		entropy:   ulid.Monotonic(rand.Reader, 0),
		writes:    make(chan *writeRequest),
		closing:   make(chan struct{}),
		uses:      newUsageBuffer(),
		flushStop: make(chan struct{}),
		lock:      lock,
		full:      newFullState(),
		wal:       walPolicy{limit: walLimit, every: walCheckEvery},
		ckpt:      checkpointer{wake: make(chan struct{}, 1), stop: make(chan struct{})},
	}
	for _, o := range opts {
		o(db)
	}
	if err := db.open(ctx); err != nil {
		db.Close()
		if db.checkLater && corrupt(err) {
			// The start met a damaged page: the whole file is checked
			// now, so that it opens read-only as it would have.
			return Open(ctx, path, append(slices.Clip(opts), checkNow)...)
		}
		return nil, err
	}
	return db, nil
}

// checkNow undoes CheckLater.
func checkNow(db *DB) { db.checkLater = false }

func (db *DB) open(ctx context.Context) (err error) {
	if db.vfs, err = storeVFS(db.vfs); err != nil {
		return err
	}
	// initConn (FTS5, which is not built into the driver, with hearth_rank;
	// hearth_has_cjk; the planner's settings) runs on every new connection
	// of every pool, initWriter on the writer's.
	db.writer, err = driver.Open(withVFS(dsn(db.path, "immediate", writerPragmas), db.vfs), db.initWriter)
	if err != nil {
		return fmt.Errorf("storage: open writer: %w", err)
	}
	db.writer.SetMaxOpenConns(1)
	db.writerStmts = newStmtCache(db.writer)
	db.writer.SetMaxIdleConns(1)
	db.writer.SetConnMaxLifetime(0)
	db.writer.SetConnMaxIdleTime(0)

	// journal_mode(wal) fails silently where WAL is impossible (some network
	// file systems): the pragma answers with the mode it kept.
	var mode string
	if err := db.writer.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode); err != nil {
		return db.openError(err)
	}
	if mode != "wal" {
		return fmt.Errorf("storage: open: journal_mode is %q, want \"wal\"", mode)
	}
	// Integrity checks, then migrations (integrity.go).
	if err := db.openChecked(ctx); err != nil {
		return err
	}
	if err := private(db.path); err != nil {
		return fmt.Errorf("storage: open: %w", err)
	}
	// A damaged file takes no new ids: it is read-only.
	if err := db.loadLastID(ctx); err != nil && db.damaged.Load() == nil {
		return err
	}
	if err := db.loadSessionKey(ctx); err != nil && db.damaged.Load() == nil {
		return err
	}

	db.reader, err = driver.Open(withVFS(dsn(db.path, "deferred", readerPragmas), db.vfs), db.initConn)
	if err != nil {
		return fmt.Errorf("storage: open readers: %w", err)
	}
	n := max(4, runtime.GOMAXPROCS(0))
	db.reader.SetMaxOpenConns(n)
	db.reader.SetMaxIdleConns(n)
	db.readerStmts = newStmtCache(db.reader)
	if db.vocab, err = driver.Open(dsn(db.path, "deferred", readerPragmas), db.initConn); err != nil {
		return fmt.Errorf("storage: open vocabulary reader: %w", err)
	}
	db.vocab.SetMaxOpenConns(2)
	db.vocab.SetMaxIdleConns(2)
	// The background checkpoint's one connection (checkpoint.go).
	if db.ckpt.pool, err = driver.Open(withVFS(dsn(db.path, "deferred", checkpointerPragmas), db.vfs), db.initConn); err != nil {
		return fmt.Errorf("storage: open checkpointer: %w", err)
	}
	db.ckpt.pool.SetMaxOpenConns(1)
	db.ckpt.pool.SetMaxIdleConns(1)
	db.ckpt.done = make(chan struct{})
	go db.checkpointLoop()

	db.loopDone = make(chan struct{})
	go db.writeLoop()
	db.flushDone = make(chan struct{})
	go db.flushLoop()
	return db.auditOpenRepairs(ctx)
}

// private makes the database and its WAL and shared-memory files readable
// by their owner alone, whatever the umask or the folder they are in:
// records and token hashes live there. The database is created 0600 when
// absent and narrowed when an older start left it wider; the driver creates
// -wal and -shm with the umask's mode when the first connection opens, so
// open narrows those again once they exist (the writer's connection keeps
// them for the life of the process).
func private(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		if err := os.Chmod(p, 0o600); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// withVFS adds the VFS parameter (vfs.go) to a DSN of dsn.
func withVFS(dsn, vfs string) string {
	return dsn + "&vfs=" + url.QueryEscape(vfs)
}

// dsn builds a file: URI for the driver. Pragmas run in the order given.
func dsn(path, txlock string, pragmas []string) string {
	q := url.Values{}
	for _, p := range pragmas {
		q.Add("_pragma", p)
	}
	q.Set("_txlock", txlock)
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(path), RawQuery: q.Encode()}
	return u.String()
}

// Path returns the database file's absolute path.
func (db *DB) Path() string { return db.path }

// Close stores the counted uses and recorded queries still in memory, stops
// the writer loop after the writes already handed to it (a write that comes
// later fails with ErrClosed), closes the readers and the writer, and
// releases the lock. It is safe to call on a partly opened DB, and more
// than once.
func (db *DB) Close() error {
	var errs []error
	db.closeOnce.Do(func() {
		// The flusher stops first, then what it had not stored is stored,
		// then the writer stops: a clean stop loses no counted use.
		close(db.flushStop)
		if db.flushDone != nil {
			<-db.flushDone
			errs = append(errs, db.FlushUsage(context.Background()))
		}
		// Recorded queries still queued (asked.go) too.
		if db.loopDone != nil {
			errs = append(errs, db.closeAsks())
		}
		close(db.closing)
	})
	if db.loopDone != nil {
		<-db.loopDone
	}
	// No commit wakes the checkpointer any more: stop it before the files
	// close (the writer's close checkpoints what is left).
	db.ckptOnce.Do(func() { close(db.ckpt.stop) })
	if db.ckpt.done != nil {
		<-db.ckpt.done
	}
	if db.ckpt.pool != nil {
		errs = append(errs, db.ckpt.pool.Close())
	}
	if db.vocab != nil {
		errs = append(errs, db.vocab.Close())
	}
	if db.reader != nil {
		if db.readerStmts != nil {
			errs = append(errs, db.readerStmts.close())
		}
		errs = append(errs, db.reader.Close())
	}
	if db.writer != nil {
		if db.writerStmts != nil {
			errs = append(errs, db.writerStmts.close())
		}
		errs = append(errs, db.writer.Close())
	}
	// Last: the files are closed, another process may have them.
	errs = append(errs, db.lock.Release())
	db.lock = nil
	for _, err := range errs {
		if err != nil {
			return fmt.Errorf("storage: close: %w", err)
		}
	}
	return nil
}

// migrate applies every embedded migration not yet recorded, in name order,
// each in its own transaction together with its row in migrations.
func (db *DB) migrate(ctx context.Context) error {
	if _, err := db.writer.ExecContext(ctx, migrationsTable); err != nil {
		return fmt.Errorf("storage: migrations table: %w", err)
	}
	names, err := fs.Glob(migrationFS, "migrations/*.sql")
	if err != nil {
		return fmt.Errorf("storage: migrations: %w", err)
	}
	sort.Strings(names)
	for _, name := range names {
		if err := db.migrateFile(ctx, name); err != nil {
			return fmt.Errorf("storage: migration %s: %w", path.Base(name), err)
		}
	}
	return nil
}

// migrateFile applies one migration with its row in migrations. It opens its
// own transaction rather than going through write: a migration file runs
// several statements outside the statement cache, and its errors are
// internal whatever their code.
func (db *DB) migrateFile(ctx context.Context, name string) error {
	tx, err := db.begin(ctx)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback()

	base := path.Base(name)
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM migrations WHERE name = ?`, base).Scan(&n); err != nil {
		return err
	} else if n != 0 {
		return nil // already applied
	}
	buf, err := fs.ReadFile(migrationFS, name)
	if err != nil {
		return err
	}
	// A migration file holds several statements: never through the cache.
	if _, err := tx.Tx.ExecContext(ctx, string(buf)); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO migrations (name, applied_at) VALUES (?, ?)`,
		base, tx.now.UnixMilli()); err != nil {
		return err
	}
	return tx.Commit()
}

// loadLastID seeds the id clock from the newest stored id, so ids keep
// sorting by creation across a restart even if the wall clock stepped back.
func (db *DB) loadLastID(ctx context.Context) error {
	var last sql.NullString
	if err := db.writer.QueryRowContext(ctx, `SELECT MAX(id) FROM records`).Scan(&last); err != nil {
		return fmt.Errorf("storage: open: %w", err)
	}
	if last.Valid {
		if id, err := ulid.ParseStrict(last.String); err == nil {
			db.lastMS = id.Time()
		}
	}
	return nil
}

// newID returns a new record id: a ULID whose time part never goes backwards
// and whose entropy increases within one millisecond, so ids sort by creation.
func (db *DB) newID(now time.Time) (string, error) {
	db.idMu.Lock()
	defer db.idMu.Unlock()
	ms := max(ulid.Timestamp(now), db.lastMS)
	id, err := ulid.New(ms, db.entropy)
	if err != nil {
		return "", fmt.Errorf("storage: new id: %w", err)
	}
	db.lastMS = ms
	return id.String(), nil
}

// now reads the clock once, in UTC and at the millisecond precision rows keep.
func (db *DB) now() time.Time {
	return db.Now().UTC().Truncate(time.Millisecond)
}

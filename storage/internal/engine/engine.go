// Package engine is the store's SQLite engine: the file and its lock, the
// connection pools and their prepared statements, the single writer's loop
// with its group commit, checkpoints, a full disk, integrity checks and
// repairs, backups and the migrations. It knows nothing of records: the
// storage package above it says, through Config, what runs on every
// connection and around a commit (docs/design.md, "Storage layout").
package engine

import (
	"context"
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
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ncruces/go-sqlite3"
	"github.com/ncruces/go-sqlite3/driver"
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

// Config is what the store above the engine gives it: where the file is,
// its clock, and the hooks through which the record domain and the
// full-text index take part in the engine's work.
type Config struct {
	// Path is the database file's absolute path.
	Path string
	// VFS names the SQLite VFS under the engine's own ("" is the OS's).
	VFS string
	// CheckLater leaves the whole-file check of a file that needs no
	// migration to CheckDeferred.
	CheckLater bool
	// Now is the clock, read once per transaction (Tx.Now).
	Now func() time.Time
	// Funcs registers the SQL functions, tokenizers and settings every
	// connection of every pool needs; Writer, what the writer's needs
	// besides (functions only migrations call).
	Funcs, Writer func(*sqlite3.Conn) error
	// Opened runs on the writer connection once the file is checked and
	// migrated, before the writer loop starts: it reads what the store
	// keeps for its life. Its error fails the open unless the file is
	// damaged (a damaged file opens read-only).
	Opened func(ctx context.Context, conn *sql.Conn) error
	// Untouched reports the ops whose writes never change the records or
	// their full-text index: their commits leave Gen as it was and skip
	// the index's pending rows.
	Untouched func(op string) bool
	// Check is the whole-file check with its audit (storage's
	// CheckIntegrity), which the engine starts in the background when a
	// write meets a damaged page.
	Check func(ctx context.Context)
	// Tidy runs one step of the idle writer's work in tx (merging the
	// full-text index) and reports whether it changed anything.
	Tidy func(ctx context.Context, tx *Tx) (bool, error)
	// TidyAfter replaces tidyAfter when above 0; below 0 the idle writer
	// never runs Tidy. For tests that need the index's segments as the
	// commits left them, whatever the machine's pace.
	TidyAfter time.Duration
	// WALLimit, WALEvery, FullRetryMin and FullRetryMax replace WALLimit,
	// walCheckEvery, fullRetryMin and fullRetryMax when set: for tests.
	WALLimit                   int64
	WALEvery                   time.Duration
	FullRetryMin, FullRetryMax time.Duration
}

// Engine is one SQLite file: one writer connection run by the writer
// loop, a pool of readers, a vocabulary pool and the checkpointer's
// connection. It is safe for concurrent use.
type Engine struct {
	cfg    Config
	path   string
	lock   *Lock
	writer *sql.DB
	reader *sql.DB
	// vocab is a reader pool of its own for counting the full-text index's
	// document frequencies (package fts).
	vocab *sql.DB
	// Prepared statements of each pool (stmtcache.go).
	writerStmts, readerStmts *stmtCache

	// The writer loop (tx.go): writes waits for it, closing stops it,
	// loopDone says it has stopped; nil loopDone means it never started.
	writes    chan *writeRequest
	closing   chan struct{}
	loopDone  chan struct{}
	closeOnce sync.Once
	ckptOnce  sync.Once
	waiting   atomic.Int64
	// groups and grouped count the groups the loop committed and the
	// writes they held (GroupStats); tidied, the idle writer's Tidy
	// steps.
	groups, grouped atomic.Int64
	tidied          atomic.Int64
	// gen counts commits that may have changed the full-text index (Gen).
	gen atomic.Uint64

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

// Open opens (creating if needed) the database at cfg.Path, with its
// parent directory, checks that it runs in WAL mode, checks the file and
// applies pending migrations. It holds the database's Lock until Close.
// The writer loop starts with Start. A file opened with CheckLater whose
// opening meets a damaged page is opened again, checked whole.
func Open(ctx context.Context, cfg Config) (*Engine, error) {
	abs := cfg.Path
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return nil, fmt.Errorf("storage: open: %w", err)
	}
	warmSchema(cfg.schemaFuncs)
	lock, err := AcquireLock(abs)
	if err != nil {
		return nil, err
	}
	if err := private(abs); err != nil {
		lock.Release()
		return nil, fmt.Errorf("storage: open: %w", err)
	}
	limit, every := cfg.WALLimit, cfg.WALEvery
	if limit == 0 {
		limit, every = WALLimit, walCheckEvery
	}
	e := &Engine{
		cfg:        cfg,
		path:       abs,
		vfs:        cfg.VFS,
		checkLater: cfg.CheckLater,
		writes:     make(chan *writeRequest),
		closing:    make(chan struct{}),
		lock:       lock,
		full:       newFullState(cfg.FullRetryMin, cfg.FullRetryMax),
		wal:        walPolicy{limit: limit, every: every},
		ckpt:       checkpointer{wake: make(chan struct{}, 1), stop: make(chan struct{})},
	}
	if err := e.open(ctx); err != nil {
		e.Close()
		if e.checkLater && Corrupt(err) {
			// The start met a damaged page: the whole file is checked
			// now, so that it opens read-only as it would have.
			cfg.CheckLater = false
			return Open(ctx, cfg)
		}
		return nil, err
	}
	return e, nil
}

// schemaFuncs registers on a connection what the migrations need: Funcs
// and Writer.
func (c Config) schemaFuncs(conn *sqlite3.Conn) error {
	if c.Funcs != nil {
		if err := c.Funcs(conn); err != nil {
			return err
		}
	}
	if c.Writer != nil {
		return c.Writer(conn)
	}
	return nil
}

func (e *Engine) open(ctx context.Context) (err error) {
	if e.vfs, err = storeVFS(e.vfs); err != nil {
		return err
	}
	// Funcs runs on every new connection of every pool, initWriter on the
	// writer's.
	e.writer, err = driver.Open(withVFS(dsn(e.path, "immediate", writerPragmas), e.vfs), e.initWriter)
	if err != nil {
		return fmt.Errorf("storage: open writer: %w", err)
	}
	e.writer.SetMaxOpenConns(1)
	e.writerStmts = newStmtCache(e.writer)
	e.writer.SetMaxIdleConns(1)
	e.writer.SetConnMaxLifetime(0)
	e.writer.SetConnMaxIdleTime(0)

	// journal_mode(wal) fails silently where WAL is impossible (some network
	// file systems): the pragma answers with the mode it kept.
	var mode string
	if err := e.writer.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode); err != nil {
		return e.openError(err)
	}
	if mode != "wal" {
		return fmt.Errorf("storage: open: journal_mode is %q, want \"wal\"", mode)
	}
	// Integrity checks, then migrations (integrity.go).
	if err := e.openChecked(ctx); err != nil {
		return err
	}
	if err := private(e.path); err != nil {
		return fmt.Errorf("storage: open: %w", err)
	}
	// A damaged file takes no new ids: it is read-only.
	if e.cfg.Opened != nil {
		if err := e.onWriter(ctx, func(conn *sql.Conn) error { return e.cfg.Opened(ctx, conn) }); err != nil && e.damaged.Load() == nil {
			return err
		}
	}

	e.reader, err = driver.Open(withVFS(dsn(e.path, "deferred", readerPragmas), e.vfs), e.initConn)
	if err != nil {
		return fmt.Errorf("storage: open readers: %w", err)
	}
	n := max(4, runtime.GOMAXPROCS(0))
	e.reader.SetMaxOpenConns(n)
	e.reader.SetMaxIdleConns(n)
	e.readerStmts = newStmtCache(e.reader)
	if e.vocab, err = driver.Open(dsn(e.path, "deferred", readerPragmas), e.initConn); err != nil {
		return fmt.Errorf("storage: open vocabulary reader: %w", err)
	}
	e.vocab.SetMaxOpenConns(2)
	e.vocab.SetMaxIdleConns(2)
	// The background checkpoint's one connection (checkpoint.go).
	if e.ckpt.pool, err = driver.Open(withVFS(dsn(e.path, "deferred", checkpointerPragmas), e.vfs), e.initConn); err != nil {
		return fmt.Errorf("storage: open checkpointer: %w", err)
	}
	e.ckpt.pool.SetMaxOpenConns(1)
	e.ckpt.pool.SetMaxIdleConns(1)
	e.ckpt.done = make(chan struct{})
	go e.checkpointLoop()

	e.loopDone = make(chan struct{})
	go e.writeLoop()
	return nil
}

// initConn prepares a new connection of any pool: Funcs.
func (e *Engine) initConn(c *sqlite3.Conn) error {
	if e.cfg.Funcs == nil {
		return nil
	}
	return e.cfg.Funcs(c)
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

// WriterDSN is the DSN the writer opens path with, without the VFS.
func WriterDSN(path string) string { return dsn(path, "immediate", writerPragmas) }

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
func (e *Engine) Path() string { return e.path }

// Reader is the readers' pool, for a statement outside a transaction (a
// job count, a plan in a test). Everything else reads through Read.
func (e *Engine) Reader() *sql.DB { return e.reader }

// Writer is the writer's pool: for tests that look at or break the file
// as the writer sees it. The store writes through Write.
func (e *Engine) Writer() *sql.DB { return e.writer }

// Vocab is the vocabulary pool, on which the full-text index counts
// document frequencies outside any read transaction.
func (e *Engine) Vocab() *sql.DB { return e.vocab }

// Gen counts the commits that may have changed the full-text index: a
// cache of what the index holds is valid for one generation.
func (e *Engine) Gen() uint64 { return e.gen.Load() }

// Tidied counts the idle writer's Tidy steps that changed anything.
func (e *Engine) Tidied() int64 { return e.tidied.Load() }

// Warm opens a connection in the readers' pool and in the vocabulary
// pool, each running Funcs, so that the first read does not wait for it.
func (e *Engine) Warm(ctx context.Context) error {
	if err := e.reader.PingContext(ctx); err != nil {
		return fmt.Errorf("storage: warm readers: %w", err)
	}
	if err := e.vocab.PingContext(ctx); err != nil {
		return fmt.Errorf("storage: warm vocabulary reader: %w", err)
	}
	return nil
}

// Close stops the writer loop after the writes already handed to it (a
// write that comes later fails with ErrClosed), closes the pools and
// releases the lock. It is safe to call on a partly opened Engine, and
// more than once.
func (e *Engine) Close() error {
	var errs []error
	e.closeOnce.Do(func() { close(e.closing) })
	if e.loopDone != nil {
		<-e.loopDone
	}
	// No commit wakes the checkpointer any more: stop it before the files
	// close (the writer's close checkpoints what is left).
	e.ckptOnce.Do(func() { close(e.ckpt.stop) })
	if e.ckpt.done != nil {
		<-e.ckpt.done
	}
	if e.ckpt.pool != nil {
		errs = append(errs, e.ckpt.pool.Close())
	}
	if e.vocab != nil {
		errs = append(errs, e.vocab.Close())
	}
	if e.reader != nil {
		if e.readerStmts != nil {
			errs = append(errs, e.readerStmts.close())
		}
		errs = append(errs, e.reader.Close())
	}
	if e.writer != nil {
		if e.writerStmts != nil {
			errs = append(errs, e.writerStmts.close())
		}
		errs = append(errs, e.writer.Close())
	}
	// Last: the files are closed, another process may have them.
	errs = append(errs, e.lock.Release())
	e.lock = nil
	for _, err := range errs {
		if err != nil {
			return fmt.Errorf("storage: close: %w", err)
		}
	}
	return nil
}

// migrate applies every embedded migration not yet recorded, in name order,
// each in its own transaction together with its row in migrations.
func (e *Engine) migrate(ctx context.Context) error {
	if _, err := e.writer.ExecContext(ctx, migrationsTable); err != nil {
		return fmt.Errorf("storage: migrations table: %w", err)
	}
	names, err := fs.Glob(migrationFS, "migrations/*.sql")
	if err != nil {
		return fmt.Errorf("storage: migrations: %w", err)
	}
	sort.Strings(names)
	for _, name := range names {
		if err := e.migrateFile(ctx, name); err != nil {
			return fmt.Errorf("storage: migration %s: %w", path.Base(name), err)
		}
	}
	return nil
}

// migrateFile applies one migration with its row in migrations. It opens its
// own transaction rather than going through write: a migration file runs
// several statements outside the statement cache, and its errors are
// internal whatever their code.
func (e *Engine) migrateFile(ctx context.Context, name string) error {
	tx, err := e.begin(ctx, e.now())
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
		base, tx.Now.UnixMilli()); err != nil {
		return err
	}
	return tx.Commit()
}

// now reads the clock once, in UTC and at the millisecond precision rows keep.
func (e *Engine) now() time.Time {
	return e.cfg.Now().UTC().Truncate(time.Millisecond)
}

// Corrupt reports whether err is SQLite finding the file damaged
// (SQLITE_CORRUPT, SQLITE_NOTADB), by code.
func Corrupt(err error) bool { return corrupt(err) }

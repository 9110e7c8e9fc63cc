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
	"fmt"
	"io"
	"path/filepath"
	"sync"
	"time"

	"github.com/ncruces/go-sqlite3"
	"github.com/oklog/ulid/v2"

	"github.com/hearth-memory/hearth/storage/flush"
	"github.com/hearth-memory/hearth/storage/internal/engine"
	"github.com/hearth-memory/hearth/storage/internal/fts"
	"github.com/hearth-memory/hearth/storage/internal/pgengine"
	"github.com/hearth-memory/hearth/storage/internal/sessions"
)

// DB is the store: the record domain over its engine (package engine: one
// writer connection and a pool of readers over one SQLite file). It is
// safe for concurrent use.
type DB struct {
	path string
	// eng is what the domain asks of its engine (engine.go); lite is the
	// same SQLite engine for what only it has: its health, checks,
	// checkpoints and backups.
	eng  engineOps
	lite *engine.Engine
	// pg is the PostgreSQL engine when the store runs on one (then lite
	// is nil; backend.go); closer is whichever of the two is open.
	pg     *pgengine.Engine
	closer io.Closer
	// cfg is what Open gives the engine; options set it.
	cfg engine.Config

	// Now is the clock. It is read once per transaction, so every row a
	// mutation writes carries the same time. Tests may replace it before use.
	Now func() time.Time

	idMu    sync.Mutex
	entropy *ulid.MonotonicEntropy
	lastMS  uint64 // time part of the last id made, so ids never go backwards

	// sessionKey keys the digest a recorded search keeps of its session
	// (sessions.Digest).
	sessionKey []byte

	closeOnce sync.Once

	// uses holds counted uses until its loop stores them (usagebuf.go).
	uses *flush.Buffer[uses]

	// fts is the full-text engine's state: document frequencies per
	// generation of the index (engineOps.Gen), counted on the engine's
	// vocabulary pool, and the stems hearth_rank learned.
	fts *fts.Index
	// pgfts is the full-text ranking on PostgreSQL (search_postgres.go).
	pgfts *fts.PGIndex
	// nsKeys caches the namespaces' full-text keys (search.go).
	nsKeys nsKeyCache
	// lean is the share of the rows the lean ranking looked up that it
	// kept (search.go).
	lean leanShare

	// asks are recorded queries waiting for the writer (asked.go).
	asks *askQueue

	// excl holds the exclusive runs going on in this process
	// (exclusive.go).
	excl exclusive

	// tokens keeps the stored tokens between token writes on SQLite
	// (tokens.go).
	tokens tokenCache
}

// Option changes how Open opens the store.
type Option func(*DB)

// WithVFS opens the database through the SQLite VFS registered as name
// instead of the operating system's: a test seam (package faultvfs).
func WithVFS(name string) Option { return func(db *DB) { db.cfg.VFS = name } }

// CheckLater opens a file that needs no migration without checking it
// whole: its header, schema and migrations are checked as always, but
// PRAGMA quick_check and the full-text index's check, which read every
// page, are left to the caller, who runs CheckIntegrity once it serves
// (docs/operations.md, "Start-up"). A new file, one that needs a
// migration, or one whose opening meets a damaged page is checked whole
// before Open returns, as without the option.
func CheckLater() Option { return func(db *DB) { db.cfg.CheckLater = true } }

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
	db := newDB(opts)
	db.path = abs
	cfg := db.cfg
	cfg.Path = abs
	cfg.Now = func() time.Time { return db.Now() }
	cfg.Funcs = db.fts.Register
	cfg.Writer = sessions.RegisterDigest
	cfg.Opened = db.opened
	cfg.Untouched = func(op string) bool { return indexUntouched[op] }
	cfg.Tidy = fts.TidyStep
	cfg.Check = func(ctx context.Context) { _, _ = db.CheckIntegrity(ctx) }
	lite, err := engine.Open(ctx, cfg)
	if err != nil {
		return nil, lift(err)
	}
	db.eng, db.lite, db.closer = lite, lite, lite
	db.start()
	if err := db.auditOpenRepairs(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// newDB makes a DB with opts applied, not yet on an engine.
func newDB(opts []Option) *DB {
	db := &DB{
		Now:     time.Now,
		entropy: ulid.Monotonic(rand.Reader, 0),
	}
	db.uses, db.asks = db.newUses(), db.newAsks()
	db.fts = fts.New(func() uint64 { return db.eng.Gen() }, db.vocab)
	db.pgfts = fts.NewPG(func() uint64 { return db.eng.Gen() })
	for _, o := range opts {
		o(db)
	}
	return db
}

// start starts the DB's background work once its engine is open.
func (db *DB) start() { db.uses.Start() }

// opened reads, on the writer connection once the file is checked and
// migrated, what the store keeps for its life: the newest id and the
// session digest key. A damaged file takes no new ids: the engine then
// ignores the error, the store being read-only.
func (db *DB) opened(ctx context.Context, conn *sql.Conn) error {
	errID := db.loadLastID(ctx, conn)
	key, errKey := sessions.LoadKey(ctx, conn)
	db.sessionKey = key
	if errID != nil {
		return errID
	}
	return errKey
}

// schemaFuncs registers on a connection what the migrations need, for a
// file no DB has open (Verify, BackupFile, Restore): what every
// connection has (fts.Index.Register) and the writer's session digest.
func schemaFuncs(c *sqlite3.Conn) error {
	if err := fts.New(nil, nil).Register(c); err != nil {
		return err
	}
	return sessions.RegisterDigest(c)
}

// Path returns the database file's absolute path.
func (db *DB) Path() string { return db.path }

// Close stores the counted uses and recorded queries still in memory, stops
// the writer loop after the writes already handed to it (a write that comes
// later fails with ErrClosed), closes the readers and the writer, and
// releases the lock. It is safe to call more than once.
func (db *DB) Close() error {
	var errs []error
	db.closeOnce.Do(func() {
		// The flusher stops first, then what it had not stored is stored,
		// then the writer stops: a clean stop loses no counted use.
		errs = append(errs, db.uses.Close(context.Background()))
		// Recorded queries still queued (asked.go) too.
		errs = append(errs, db.asks.buf.Close(context.Background()))
		// Held owners' locks give their connections back (exclusive.go).
		db.excl.releaseAll()
	})
	for _, err := range errs {
		if err != nil {
			db.closer.Close()
			return fmt.Errorf("storage: close: %w", err)
		}
	}
	return db.closer.Close()
}

// loadLastID seeds the id clock from the newest stored id, so ids keep
// sorting by creation across a restart even if the wall clock stepped back.
func (db *DB) loadLastID(ctx context.Context, conn *sql.Conn) error {
	var last sql.NullString
	if err := conn.QueryRowContext(ctx, `SELECT MAX(id) FROM records`).Scan(&last); err != nil {
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

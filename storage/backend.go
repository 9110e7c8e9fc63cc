package storage

import (
	"context"
	"database/sql"
	"time"

	"github.com/hearth-memory/hearth/storage/internal/pgengine"
)

// The backends a DB runs on, as Backend names them.
const (
	// BackendSQLite is a SQLite file in the data directory (Open).
	BackendSQLite = "sqlite"
	// BackendPostgres is a PostgreSQL database (OpenPostgres).
	BackendPostgres = "postgres"
)

// OpenPostgres opens the PostgreSQL database at url (postgres://… or
// postgresql://…; pgx's connection string) as a store: the same record
// domain as Open's, over the PostgreSQL engine (docs/postgres.md). It
// applies pending migrations, several front ends starting at once taking
// turns. SQLite's options (WithVFS, CheckLater) change nothing here.
//
// What only SQLite has reports "not applicable" on it: no disk-full
// episode, no damage, no checkpoints or integrity checks (PostgreSQL's
// own), and Backup refuses, naming pg_dump. The build must link the driver
// (import package storage/postgres): without it OpenPostgres says so.
// Errors never hold url, which may carry a password; an empty url is
// Invalid (Field "database").
func OpenPostgres(ctx context.Context, url string, opts ...Option) (*DB, error) {
	if url == "" {
		return nil, errorf(Invalid, "database", "is required")
	}
	db := newDB(opts)
	pg, err := pgengine.Open(ctx, url, pgengine.Config{
		Now:       func() time.Time { return db.Now() },
		Opened:    db.opened,
		Untouched: func(op string) bool { return indexUntouched[op] },
		// The lease locks the job it takes, passing over those locked
		// (jobq.Lease; docs/postgres.md, "The job lease").
		Locking: func(op string) bool { return op == opLeaseJob },
	})
	if err != nil {
		return nil, lift(err)
	}
	db.eng, db.pg, db.closer = pg, pg, pg
	db.start()
	return db, nil
}

// Backend names the database the store runs on: BackendSQLite or
// BackendPostgres.
func (db *DB) Backend() string {
	if db.pg != nil {
		return BackendPostgres
	}
	return BackendSQLite
}

// vocab is the pool on which the full-text index counts document
// frequencies: SQLite's vocabulary pool, or PostgreSQL's one pool.
func (db *DB) vocab() *sql.DB {
	if db.lite == nil {
		return db.pg.DB()
	}
	return db.lite.Vocab()
}

// notApplicable is the refusal of an operation only SQLite has, on a
// PostgreSQL store; instead says what to use there.
func notApplicable(what, instead string) error {
	return errorf(Invalid, "", "%s is SQLite's: this store runs on PostgreSQL, where %s", what, instead)
}

// outside runs a statement outside a transaction on a read connection (a
// poll that should cost no transaction), on either engine.
type outside struct{ db *DB }

func (o outside) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if o.db.lite == nil {
		return o.db.pg.QueryRow(ctx, query, args...)
	}
	return o.db.lite.Reader().QueryRowContext(ctx, query, args...)
}

// fullWake is the engine's signal that a write succeeded while the disk
// was full; nil (never ready) on PostgreSQL, which reports no episode.
func (db *DB) fullWake() <-chan struct{} {
	if db.lite == nil {
		return nil
	}
	return db.lite.FullWake()
}

// fullRetry is how long the usage flusher waits after backoff to try a
// full disk again.
func (db *DB) fullRetry(backoff time.Duration) time.Duration {
	if db.lite == nil {
		return UsageFlushInterval
	}
	return db.lite.FullRetry(backoff)
}

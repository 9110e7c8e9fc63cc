// Package pgengine is the store's PostgreSQL engine: the record domain's
// four operations (Write, WriteSolo, Read, Gen; docs/design.md, "Storage
// layout") over a pool of connections through pgx's database/sql driver,
// each of the domain's statements rebound from SQLite's placeholders to
// PostgreSQL's (docs/postgres.md, "The engine").
//
// Every write is a transaction of its own at SERIALIZABLE: the domain's
// read-then-write guards (the revision check, supersession) were written
// for writes that run one after another, as SQLite's single writer runs
// them, and SERIALIZABLE gives each transaction exactly that, against
// other front ends' writes too. The ops Config.Locking names (the job
// lease, which locks the row it takes) run at READ COMMITTED instead. A transaction PostgreSQL cannot
// serialize (40001) or a deadlock (40P01) is rolled back and run again,
// which the domain's write contract allows: fn leaves no trace of an
// earlier run. Within one front end the writes take turns, as on SQLite:
// nearly every store updates the same counter rows (the schema's
// triggers), so writes run side by side would mostly fail each other and
// run again; other front ends' writes are what the retries are for.
//
// The package does not link the driver: a build that opens PostgreSQL
// imports package storage/postgres, which does (pgx costs the binary 4 MB;
// docs/postgres.md, "The driver and the binary").
package pgengine

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hearth-memory/hearth/storage/internal/engine"
	"github.com/hearth-memory/hearth/storage/internal/errs"
	"github.com/hearth-memory/hearth/storage/internal/pgdialect"
	"github.com/hearth-memory/hearth/storage/internal/pgschema"
)

// Driver is the database/sql driver the engine opens: pgx's, which package
// storage/postgres links.
const Driver = "pgx"

// errNoDriver says the build has no PostgreSQL driver.
var errNoDriver = errors.New("storage: open: this build of Hearth has no PostgreSQL driver " +
	"(a build links it by importing github.com/hearth-memory/hearth/storage/postgres)")

// Config is what the store gives the engine: its clock and the hooks the
// SQLite engine's Config has of the same names.
type Config struct {
	// Now is the clock, read once per transaction (Tx.Now).
	Now func() time.Time
	// Opened runs on a connection once the database is migrated: it reads
	// what the store keeps for its life.
	Opened func(ctx context.Context, conn *sql.Conn) error
	// Untouched reports the ops whose writes never change the records:
	// their commits leave Gen as it was.
	Untouched func(op string) bool
	// Locking reports the ops whose writes lock every row they read and
	// change (SELECT … FOR UPDATE): they run at READ COMMITTED, where
	// the row locks alone keep them apart, rather than SERIALIZABLE.
	Locking func(op string) bool
	// MaxConns bounds the pool (0: maxConns).
	MaxConns int
}

// maxConns bounds the connections a front end opens: PostgreSQL's default
// max_connections is 100, shared by every front end and other clients.
const maxConns = 16

// maxAttempts bounds how many times a write runs when PostgreSQL cannot
// serialize it with others; retryBase is the first wait between runs,
// doubled each time, with jitter.
const (
	maxAttempts = 12
	retryBase   = 2 * time.Millisecond
)

// Engine is one PostgreSQL database, open through a pool. It is safe for
// concurrent use.
type Engine struct {
	cfg     Config
	db      *sql.DB
	dialect *rebinder
	// turn is held by the write running now: this front end's writes
	// take turns (a channel, so that a caller's ctx ends its wait).
	turn chan struct{}
	gen  atomic.Uint64
	// retries counts the writes run again after a serialization failure
	// or a deadlock: a figure of contention.
	retries atomic.Int64
}

// Open connects to the database at url (postgres://…), migrates it
// (pgschema.Migrate) and runs cfg.Opened. Its errors never hold url,
// which may carry a password.
func Open(ctx context.Context, url string, cfg Config) (*Engine, error) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if !slices.Contains(sql.Drivers(), Driver) {
		return nil, errNoDriver
	}
	db, err := sql.Open(Driver, url)
	if err != nil {
		// pgx's parse errors quote the URL: say only that it is wrong.
		return nil, errs.Errorf(errs.Invalid, "database", "is not a PostgreSQL connection URL")
	}
	n := cfg.MaxConns
	if n <= 0 {
		n = maxConns
	}
	db.SetMaxOpenConns(n)
	db.SetMaxIdleConns(n)
	e := &Engine{cfg: cfg, db: db, dialect: &rebinder{m: map[string]string{}}, turn: make(chan struct{}, 1)}
	if err := e.open(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return e, nil
}

func (e *Engine) open(ctx context.Context) error {
	if err := e.db.PingContext(ctx); err != nil {
		return fmt.Errorf("storage: open: connect to PostgreSQL: %w", err)
	}
	if err := pgschema.Migrate(ctx, e.db, e.cfg.Now); err != nil {
		return fmt.Errorf("storage: open: %w", err)
	}
	if e.cfg.Opened == nil {
		return nil
	}
	conn, err := e.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("storage: open: %w", err)
	}
	defer conn.Close()
	return e.cfg.Opened(ctx, conn)
}

// Close closes the pool.
func (e *Engine) Close() error { return e.db.Close() }

// DB is the engine's pool, for reads outside a transaction.
func (e *Engine) DB() *sql.DB { return e.db }

// QueryRow runs query, rebound, outside a transaction (a poll that
// should cost none).
func (e *Engine) QueryRow(ctx context.Context, query string, args ...any) *sql.Row {
	return e.db.QueryRowContext(ctx, e.dialect.SQL(query), args...)
}

// Retries returns how many writes ran again since open because PostgreSQL
// could not serialize them with others or found a deadlock.
func (e *Engine) Retries() int64 { return e.retries.Load() }

// Write runs fn in a transaction of its own at SERIALIZABLE (READ
// COMMITTED for an op Config.Locking names) and commits it. fn's error comes back as fn returned it; a failure to begin or
// commit is an internal error naming op. A serialization failure or a
// deadlock, whether fn or the commit met it, runs fn again in a new
// transaction (up to maxAttempts runs). A full disk (53100) is Full.
func (e *Engine) Write(ctx context.Context, op string, fn func(tx *engine.Tx) error) error {
	select {
	case e.turn <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-e.turn }()
	wait := retryBase
	for attempt := 1; ; attempt++ {
		err := e.writeOnce(ctx, op, fn)
		if err == nil {
			if e.cfg.Untouched == nil || !e.cfg.Untouched(op) {
				e.gen.Add(1)
			}
			return nil
		}
		if !retryable(err) || attempt == maxAttempts {
			return classify(op, err)
		}
		e.retries.Add(1)
		// Jitter keeps the writes that failed together from meeting again.
		t := time.NewTimer(wait/2 + rand.N(wait))
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		wait = min(2*wait, 100*time.Millisecond)
	}
}

// WriteSolo is Write: every write here is a transaction of its own.
func (e *Engine) WriteSolo(ctx context.Context, op string, fn func(tx *engine.Tx) error) error {
	return e.Write(ctx, op, fn)
}

// writeOnce runs fn once in a new transaction and commits.
func (e *Engine) writeOnce(ctx context.Context, op string, fn func(tx *engine.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	level := sql.LevelSerializable
	if e.cfg.Locking != nil && e.cfg.Locking(op) {
		level = sql.LevelReadCommitted
	}
	sqlTx, err := e.db.BeginTx(ctx, &sql.TxOptions{Isolation: level})
	if err != nil {
		return fmt.Errorf("storage: %s: begin: %w", op, err)
	}
	tx := engine.NewTx(sqlTx, e.now(), e.dialect)
	defer sqlTx.Rollback()
	if err := fn(tx); err != nil {
		return err
	}
	if err := sqlTx.Commit(); err != nil {
		return fmt.Errorf("storage: %s: commit: %w", op, err)
	}
	return nil
}

// Read runs fn in a read-only transaction at REPEATABLE READ: one snapshot
// for every statement fn runs, taken at its first, never waiting for a
// writer nor failing for one.
func (e *Engine) Read(ctx context.Context, op string, fn func(tx *engine.Tx) error) error {
	sqlTx, err := e.db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
	if err != nil {
		return fmt.Errorf("storage: %s: begin read: %w", op, err)
	}
	defer sqlTx.Rollback()
	return fn(engine.NewTx(sqlTx, e.now(), e.dialect))
}

// Gen counts this front end's commits that may have changed the records.
func (e *Engine) Gen() uint64 { return e.gen.Load() }

// now reads the clock once, in UTC at the millisecond precision rows keep.
func (e *Engine) now() time.Time { return e.cfg.Now().UTC().Truncate(time.Millisecond) }

// sqlState is what pgx's errors (*pgconn.PgError) say of their cause,
// read without naming the driver's types.
type sqlState interface{ SQLState() string }

// State returns the SQLSTATE code of the PostgreSQL error err wraps, or "".
func State(err error) string {
	var s sqlState
	if errors.As(err, &s) {
		return s.SQLState()
	}
	return ""
}

// StateUnique is PostgreSQL's unique_violation (a primary key too): the
// domain's Exists (errs.Taken).
const StateUnique = errs.StateUnique

// PostgreSQL's error codes the engine acts on.
const (
	stateSerialization = "40001"
	stateDeadlock      = "40P01"
	stateDiskFull      = "53100"
)

// retryable reports whether err means the transaction may succeed run again.
func retryable(err error) bool {
	s := State(err)
	return s == stateSerialization || s == stateDeadlock
}

// classify gives a full disk as Full; any other error is left as it is.
func classify(op string, err error) error {
	if State(err) == stateDiskFull {
		return &errs.Error{Code: errs.Full, Message: fmt.Sprintf(
			"%s: the disk holding the PostgreSQL database is full: the write was not made", op)}
	}
	return err
}

// Args gives each bool argument as the 0/1 bigint a flag column holds, as
// SQLite's driver stores a bool (docs/postgres.md, The schema); the rest
// go as they are. args is copied only when it holds a bool.
func (r *rebinder) Args(args []any) []any {
	var out []any
	for i, a := range args {
		b, ok := a.(bool)
		if !ok {
			continue
		}
		if out == nil {
			out = slices.Clone(args)
		}
		out[i] = int64(0)
		if b {
			out[i] = int64(1)
		}
	}
	if out == nil {
		return args
	}
	return out
}

// Name names the engine for Tx.Engine.
func (r *rebinder) Name() string { return "postgres" }

// rebinder is the engine's Dialect: pgdialect.Rebind, cached by the
// statement's SQLite text (the domain's statements are constants, or built
// from a few pieces: the cache stays small).
type rebinder struct {
	mu sync.RWMutex
	m  map[string]string
}

// maxRebound bounds the cache against statements built with values in
// them; past it, statements are rebound each time.
const maxRebound = 4096

// SQL returns query with PostgreSQL's placeholders. A query Rebind refuses
// (a literal left open, a $ outside quotes) goes as it is: PostgreSQL then
// refuses it with its own error, which names the statement's fault.
func (r *rebinder) SQL(query string) string {
	r.mu.RLock()
	out, ok := r.m[query]
	r.mu.RUnlock()
	if ok {
		return out
	}
	out, err := pgdialect.Rebind(query)
	if err != nil {
		return query
	}
	r.mu.Lock()
	if len(r.m) < maxRebound {
		r.m[query] = out
	}
	r.mu.Unlock()
	return out
}

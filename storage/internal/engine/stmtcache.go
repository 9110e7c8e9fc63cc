package engine

import (
	"context"
	"database/sql"
	"maps"
	"sync"
)

// maxCachedStatements bounds the cache; queries are constants in this
// package, so the bound is never reached in practice.
const maxCachedStatements = 256

// stmtCache keeps prepared statements per connection pool, keyed by their
// SQL. Preparing is a large share of a small write: SQLite compiles the
// triggers (full-text index, audit guards) into every INSERT and UPDATE.
//
// A statement cannot be prepared on the pool while a transaction holds the
// writer's only connection, so a miss inside a transaction runs uncached and
// marks the SQL; the transaction prepares what it marked once it has ended.
// Later transactions reuse the statement through Tx.StmtContext, which
// reuses what is already prepared on their connection.
type stmtCache struct {
	pool *sql.DB
	mu   sync.RWMutex
	m    map[string]*sql.Stmt
	want map[string]bool
	bad  map[string]bool // SQL that would not prepare alone (several statements)
}

func newStmtCache(pool *sql.DB) *stmtCache {
	return &stmtCache{pool: pool, m: map[string]*sql.Stmt{}, want: map[string]bool{}, bad: map[string]bool{}}
}

func (c *stmtCache) lookup(query string) *sql.Stmt {
	c.mu.RLock()
	st := c.m[query]
	c.mu.RUnlock()
	if st == nil {
		c.mu.Lock()
		if !c.bad[query] && len(c.m)+len(c.want) < maxCachedStatements {
			c.want[query] = true
		}
		c.mu.Unlock()
	}
	return st
}

// fill prepares the statements marked since the last fill. Failures only
// leave a statement uncached.
func (c *stmtCache) fill() {
	c.mu.Lock()
	if len(c.want) == 0 {
		c.mu.Unlock()
		return
	}
	want := c.want
	c.want = map[string]bool{}
	c.mu.Unlock()
	for q := range want {
		st, err := c.pool.PrepareContext(context.Background(), q)
		c.mu.Lock()
		if err != nil {
			c.bad[q] = true
		} else if c.m[q] == nil {
			c.m[q] = st
			st = nil
		}
		c.mu.Unlock()
		if st != nil {
			st.Close()
		}
	}
}

func (c *stmtCache) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var first error
	for _, st := range c.m {
		if err := st.Close(); err != nil && first == nil {
			first = err
		}
	}
	c.m = map[string]*sql.Stmt{}
	return first
}

// Statements returns the statements cached so far on the writer's pool
// (writer) or the readers', by their SQL: for tests of what is cached.
func (e *Engine) Statements(writer bool) map[string]*sql.Stmt {
	c := e.readerStmts
	if writer {
		c = e.writerStmts
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	return maps.Clone(c.m)
}

// ExecContext runs query in the transaction, through a cached statement
// when there is one.
func (tx *Tx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if tx.dialect != nil {
		return tx.Tx.ExecContext(ctx, tx.dialect.SQL(query), tx.dialect.Args(args)...)
	}
	ctx = tx.statementContext(ctx)
	if st := tx.stmts.lookup(query); st != nil {
		return tx.Tx.StmtContext(ctx, st).ExecContext(ctx, args...)
	}
	return tx.Tx.ExecContext(ctx, query, args...)
}

// QueryContext runs query in the transaction, through a cached statement
// when there is one.
func (tx *Tx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if tx.dialect != nil {
		return tx.Tx.QueryContext(ctx, tx.dialect.SQL(query), tx.dialect.Args(args)...)
	}
	ctx = tx.statementContext(ctx)
	if st := tx.stmts.lookup(query); st != nil {
		return tx.Tx.StmtContext(ctx, st).QueryContext(ctx, args...)
	}
	return tx.Tx.QueryContext(ctx, query, args...)
}

// QueryRowContext runs query in the transaction, through a cached statement
// when there is one.
func (tx *Tx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if tx.dialect != nil {
		return tx.Tx.QueryRowContext(ctx, tx.dialect.SQL(query), tx.dialect.Args(args)...)
	}
	ctx = tx.statementContext(ctx)
	if st := tx.stmts.lookup(query); st != nil {
		return tx.Tx.StmtContext(ctx, st).QueryRowContext(ctx, args...)
	}
	return tx.Tx.QueryRowContext(ctx, query, args...)
}

// PrepareContext returns query as a statement of the transaction, for a
// caller that runs it several times: the cached statement when there is
// one, else one prepared for the transaction alone. Closing it leaves the
// cached statement open.
func (tx *Tx) PrepareContext(ctx context.Context, query string) (*sql.Stmt, error) {
	if tx.dialect != nil {
		return tx.Tx.PrepareContext(ctx, tx.dialect.SQL(query))
	}
	ctx = tx.statementContext(ctx)
	if st := tx.stmts.lookup(query); st != nil {
		return tx.Tx.StmtContext(ctx, st), nil
	}
	return tx.Tx.PrepareContext(ctx, query)
}

// Commit commits and then prepares what the transaction marked.
func (tx *Tx) Commit() error {
	err := tx.Tx.Commit()
	if tx.stmts != nil {
		tx.stmts.fill()
	}
	return err
}

// Rollback rolls back (a no-op after Commit) and prepares what the
// transaction marked.
func (tx *Tx) Rollback() error {
	err := tx.Tx.Rollback()
	if tx.stmts != nil {
		tx.stmts.fill()
	}
	return err
}

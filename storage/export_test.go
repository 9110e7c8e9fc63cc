package storage

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/hearth-memory/hearth/storage/internal/engine"
	"github.com/hearth-memory/hearth/storage/internal/fts"
	"github.com/hearth-memory/hearth/storage/internal/pgdialect"
)

// Test-only access to internals, for the external storage_test package.

// FTSQuery exposes fts.Query.
var FTSQuery = fts.Query

// WriterDSN is the DSN the writer opens path with.
func WriterDSN(path string) string { return engine.WriterDSN(path) }

// ExecRaw runs SQL on the writer outside the API: tests use it to probe
// triggers and to build states the API refuses to make.
func (db *DB) ExecRaw(ctx context.Context, query string, args ...any) error {
	if db.lite == nil {
		_, err := db.pg.DB().ExecContext(ctx, rebind(query), args...)
		return err
	}
	_, err := db.lite.Writer().ExecContext(ctx, query, args...)
	return err
}

// rebind gives query PostgreSQL's placeholders, failing the test's query
// where Rebind refuses it.
func rebind(query string) string {
	out, err := pgdialect.Rebind(query)
	if err != nil {
		return "rebind: " + err.Error()
	}
	return out
}

// rawPool is the pool ExecRaw and QueryRaw run on: the writer's or the
// readers' on SQLite, the one pool on PostgreSQL.
func (db *DB) rawPool(reader bool) *sql.DB {
	switch {
	case db.lite == nil:
		return db.pg.DB()
	case reader:
		return db.lite.Reader()
	}
	return db.lite.Writer()
}

// QueryRaw scans the one row query yields into dest, on the writer (w) or a reader.
func (db *DB) QueryRaw(ctx context.Context, reader bool, query string, dest ...any) error {
	if db.lite == nil {
		query = rebind(query)
	}
	return db.rawPool(reader).QueryRowContext(ctx, query).Scan(dest...)
}

// Snapshot digests every row of every table a mutation can touch, including
// the FTS index's own pages, so a test can prove that nothing was written.
func (db *DB) Snapshot(ctx context.Context) (string, error) {
	h := sha256.New()
	qs := []string{
		`SELECT * FROM records ORDER BY seq`,
		`SELECT * FROM anchors ORDER BY record_id, anchor`,
		`SELECT * FROM usage ORDER BY record_id`,
		`SELECT * FROM audit ORDER BY seq`,
		`SELECT * FROM client_tokens ORDER BY client`,
	}
	// On PostgreSQL the index is the records' own generated columns.
	if db.lite != nil {
		qs = append(qs, `SELECT id, block FROM records_fts_data ORDER BY id`)
	}
	for _, q := range qs {
		if err := dump(ctx, db.rawPool(false), q, h); err != nil {
			return "", err
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// FTSDigest digests the FTS index's pages alone: it changes whenever a row
// is (re)indexed.
func (db *DB) FTSDigest(ctx context.Context) (string, error) {
	h := sha256.New()
	q := `SELECT id, block FROM records_fts_data ORDER BY id`
	if db.lite == nil {
		q = `SELECT seq, fts, cjk FROM records ORDER BY seq`
	}
	if err := dump(ctx, db.rawPool(false), q, h); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func dump(ctx context.Context, pool *sql.DB, query string, w interface{ Write([]byte) (int, error) }) error {
	rows, err := pool.QueryContext(ctx, query)
	if err != nil {
		return err
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		fmt.Fprintf(w, "%v\n", vals)
	}
	return rows.Err()
}

// StoreMany stores recs in one transaction: a fast bulk fill for benchmarks.
func (db *DB) StoreMany(ctx context.Context, recs []NewRecord) error {
	return db.writeGrouped(ctx, "store many", func(tx *txn) error {
		for _, nr := range recs {
			if err := nr.validate(); err != nil {
				return err
			}
			if _, err := db.storeTx(ctx, tx, nr); err != nil {
				return err
			}
		}
		return nil
	})
}

// WALLimit exposes the engine's WAL limit.
const WALLimit = engine.WALLimit

// WithWALPolicy replaces walLimit and walCheckEvery for one store.
func WithWALPolicy(limit int64, every time.Duration) Option {
	return func(db *DB) { db.cfg.WALLimit, db.cfg.WALEvery = limit, every }
}

// WithTidyAfter replaces how long the writer waits idle before it merges
// the full-text index's segments; below 0 it never does.
func WithTidyAfter(d time.Duration) Option {
	return func(db *DB) { db.cfg.TidyAfter = d }
}

// WithFullRetry replaces fullRetryMin and fullRetryMax for one store.
func WithFullRetry(lo, hi time.Duration) Option {
	return func(db *DB) { db.cfg.FullRetryMin, db.cfg.FullRetryMax = lo, hi }
}

// FullTries counts the flusher's rounds that found the disk full.
func (db *DB) FullTries() int64 { return db.lite.FullTries() }

// HoldRead reads record id in a read transaction, says so on held, and
// keeps the snapshot until release is closed.
func (db *DB) HoldRead(ctx context.Context, id string, held chan<- struct{}, release <-chan struct{}) error {
	return db.read(ctx, "hold", func(tx *txn) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM records WHERE id = ?`, id).Scan(&n); err != nil {
			return err
		}
		close(held)
		<-release
		return nil
	})
}

// IndexTidySteps returns how many merge steps the idle writer has
// committed since open (tidyIndex).
func (db *DB) IndexTidySteps() int64 { return db.lite.Tidied() }

// PostgresRetries counts the writes the PostgreSQL engine ran again.
func (db *DB) PostgresRetries() int64 { return db.pg.Retries() }

package storage

import (
	"context"

	"github.com/hearth-memory/hearth/storage/internal/fts"
)

// opMergeIndex merges full-text index segments: it rewrites how the index is
// stored, never what it holds, but is left out of indexUntouched all the
// same (a recount of document frequencies once a night costs nothing).
const opMergeIndex = "merge index"

// MergeIndex does one step of merging each full-text index's segments into
// one (FTS5's incremental 'merge' with every level a candidate: the same
// end as 'optimize', in steps), and reports whether a step did any work, so
// that a caller repeats it until none is left. Between nightly merges the
// writer keeps the segments to a few per level (fts.TidyStep); one segment is
// what a search reads fastest (every query term is looked up once per
// segment). PostgreSQL's GIN index has no segments: there it does nothing.
func (db *DB) MergeIndex(ctx context.Context) (more bool, err error) {
	if db.lite == nil {
		return false, nil
	}
	err = db.writeGrouped(ctx, opMergeIndex, func(tx *txn) error {
		var err error
		more, err = fts.MergeStep(ctx, tx)
		return classify("merge index", err)
	})
	return more, err
}

// TidyIndex does, through the write queue, what the idle writer does
// after writes stop: it merges the word index's fuller levels step by
// step until none is left, and returns how many steps merged anything.
// For a caller that must not wait for the writer to be idle (a benchmark
// that fills a store and closes it). On PostgreSQL it does nothing.
func (db *DB) TidyIndex(ctx context.Context) (int, error) {
	if db.lite == nil {
		return 0, nil
	}
	for n := 0; ; n++ {
		var merged bool
		err := db.writeGrouped(ctx, opMergeIndex, func(tx *txn) (err error) {
			merged, err = fts.TidyStep(ctx, tx)
			return classify("merge index", err)
		})
		if err != nil || !merged {
			return n, err
		}
	}
}

// MergeIndexFully repeats MergeIndex until no work is left, or steps have
// run, and says how many steps did work.
func (db *DB) MergeIndexFully(ctx context.Context, steps int) (int, error) {
	for n := 0; n < steps; n++ {
		more, err := db.MergeIndex(ctx)
		if err != nil || !more {
			return n, err
		}
	}
	return steps, nil
}

// IndexSegments counts the segments of the word index (records_fts): one
// after a full merge, a few per level between merges. PostgreSQL's GIN
// index has none: there it counts 0.
func (db *DB) IndexSegments(ctx context.Context) (int, error) {
	if db.lite == nil {
		return 0, nil
	}
	var n int
	err := db.read(ctx, "index segments", func(tx *txn) error {
		return classify("index segments", tx.QueryRowContext(ctx, `SELECT count(DISTINCT segid) FROM records_fts_idx`).Scan(&n))
	})
	return n, err
}

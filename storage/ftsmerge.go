package storage

import (
	"context"
	"fmt"
)

// opMergeIndex merges full-text index segments: it rewrites how the index is
// stored, never what it holds, but is left out of indexUntouched all the
// same (a recount of document frequencies once a night costs nothing).
const opMergeIndex = "merge index"

// mergeStepPages is how many leaf pages one MergeIndex step writes at most
// (FTS5's 'merge' command with -N): a step holds the single writer for
// tens of milliseconds on a large index, and writes wait in between.
const mergeStepPages = 200

// mergedIndexes are the full-text indexes MergeIndex merges.
var mergedIndexes = []string{"records_fts", "records_cjk"}

// MergeIndex does one step of merging each full-text index's segments into
// one (FTS5's incremental 'merge' with every level a candidate: the same
// end as 'optimize', in steps), and reports whether a step did any work, so
// that a caller repeats it until none is left. Between nightly merges FTS5's
// automerge keeps the segments to a few per level; one segment is what a
// search reads fastest (every query term is looked up once per segment).
func (db *DB) MergeIndex(ctx context.Context) (more bool, err error) {
	err = db.write(ctx, opMergeIndex, func(tx *txn) error {
		more = false
		for _, t := range mergedIndexes {
			before := totalChanges(tx)
			if _, err := tx.ExecContext(ctx, fmt.Sprintf(`INSERT INTO %[1]s (%[1]s, rank) VALUES ('merge', ?)`, t), -mergeStepPages); err != nil {
				return classify("merge index", err)
			}
			// The command itself counts one change; merging writes
			// pages, each a change. When the count cannot be read, no
			// more is asked for.
			if after := totalChanges(tx); before >= 0 && after-before > 1 {
				more = true
			}
		}
		return nil
	})
	return more, err
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
// after a full merge, a few per level between merges.
func (db *DB) IndexSegments(ctx context.Context) (int, error) {
	var n int
	err := db.read(ctx, "index segments", func(tx *txn) error {
		return classify("index segments", tx.QueryRowContext(ctx, `SELECT count(DISTINCT segid) FROM records_fts_idx`).Scan(&n))
	})
	return n, err
}

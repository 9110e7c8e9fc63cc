package storage

import (
	"context"
	"fmt"

	"github.com/hearth-memory/hearth/storage/internal/engine"
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
// that a caller repeats it until none is left. Between nightly merges the
// writer keeps the segments to a few per level (tidyIndex); one segment is
// what a search reads fastest (every query term is looked up once per
// segment).
func (db *DB) MergeIndex(ctx context.Context) (more bool, err error) {
	err = db.write(ctx, opMergeIndex, func(tx *txn) error {
		more = false
		for _, t := range mergedIndexes {
			merged, err := mergeStepTx(ctx, tx, t, -mergeStepPages)
			if err != nil {
				return classify("merge index", err)
			}
			more = more || merged
		}
		return nil
	})
	return more, err
}

// mergeStepTx runs one step of FTS5's 'merge' on table, writing about pages
// leaf pages (a negative count makes every level a candidate, a positive
// one only the levels that hold usermerge segments), and reports whether it
// merged anything. The command itself counts one change; merging writes
// pages, each a change. When the count cannot be read, nothing more is
// asked for.
func mergeStepTx(ctx context.Context, tx *txn, table string, pages int) (bool, error) {
	before := engine.TotalChanges(tx)
	if _, err := tx.ExecContext(ctx, fmt.Sprintf(`INSERT INTO %[1]s (%[1]s, rank) VALUES ('merge', ?)`, table), pages); err != nil {
		return false, err
	}
	after := engine.TotalChanges(tx)
	return before >= 0 && after-before > 1, nil
}

// Commits leave the word index's merging to the idle writer. FTS5 merges
// a level's segments once automerge of them are there, inside the commit
// that wrote the last one; at 4, its default, that merging was about two
// fifths of a group commit's time. Migration 0087 sets automerge to
// indexAutomerge, so a commit merges less often, and the writer, idle for
// tidyAfter after a commit that changed the index, merges the levels that
// hold usermerge (4) segments or more, tidyPages leaf pages a step (about
// 3 ms at 100,000 records), while no write waits (tidyIndex). Once writes
// pause, the index a search reads has the shape automerge 4 gives; under
// a long burst a level holds at most indexAutomerge-1 segments.
//
// indexAutomerge is engine.IndexAutomerge and tidyAfter the engine's; the
// engine runs tidyStepTx as its Config.Tidy.
const tidyPages = 32

// tidyStepTx runs one step of the idle writer's merging in tx: the word
// index's levels that hold usermerge segments, tidyPages pages.
func tidyStepTx(ctx context.Context, tx *txn) (bool, error) {
	return mergeStepTx(ctx, tx, "records_fts", tidyPages)
}

// TidyIndex does, through the write queue, what the idle writer does
// after writes stop: it merges the word index's fuller levels step by
// step until none is left, and returns how many steps merged anything.
// For a caller that must not wait for the writer to be idle (a benchmark
// that fills a store and closes it).
func (db *DB) TidyIndex(ctx context.Context) (int, error) {
	for n := 0; ; n++ {
		var merged bool
		err := db.write(ctx, opMergeIndex, func(tx *txn) (err error) {
			merged, err = tidyStepTx(ctx, tx)
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
// after a full merge, a few per level between merges.
func (db *DB) IndexSegments(ctx context.Context) (int, error) {
	var n int
	err := db.read(ctx, "index segments", func(tx *txn) error {
		return classify("index segments", tx.QueryRowContext(ctx, `SELECT count(DISTINCT segid) FROM records_fts_idx`).Scan(&n))
	})
	return n, err
}

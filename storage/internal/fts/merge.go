package fts

import (
	"context"
	"fmt"

	"github.com/hearth-memory/hearth/storage/internal/engine"
)

// mergeStepPages is how many leaf pages one MergeStep writes at most
// (FTS5's 'merge' command with -N): a step holds the single writer for
// tens of milliseconds on a large index, and writes wait in between.
const mergeStepPages = 200

// mergedIndexes are the full-text indexes MergeStep merges.
var mergedIndexes = []string{"records_fts", "records_cjk"}

// MergeStep runs one step of merging each full-text index's segments into
// one (FTS5's incremental 'merge' with every level a candidate: the same
// end as 'optimize', in steps) in tx, and reports whether a step did any
// work, so that a caller repeats it until none is left.
func MergeStep(ctx context.Context, tx *engine.Tx) (more bool, err error) {
	for _, t := range mergedIndexes {
		merged, err := mergeStepTx(ctx, tx, t, -mergeStepPages)
		if err != nil {
			return false, err
		}
		more = more || merged
	}
	return more, nil
}

// mergeStepTx runs one step of FTS5's 'merge' on table, writing about pages
// leaf pages (a negative count makes every level a candidate, a positive
// one only the levels that hold usermerge segments), and reports whether it
// merged anything. The command itself counts one change; merging writes
// pages, each a change. When the count cannot be read, nothing more is
// asked for.
func mergeStepTx(ctx context.Context, tx *engine.Tx, table string, pages int) (bool, error) {
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
// engine.IndexAutomerge, so a commit merges less often, and the writer,
// idle for a moment after a commit that changed the index, runs TidyStep
// (its Config.Tidy): it merges the levels that hold usermerge (4) segments
// or more, tidyPages leaf pages a step (about 3 ms at 100,000 records),
// while no write waits. Once writes pause, the index a search reads has
// the shape automerge 4 gives; under a long burst a level holds at most
// IndexAutomerge-1 segments.
const tidyPages = 32

// TidyStep runs one step of the idle writer's merging in tx: the word
// index's levels that hold usermerge segments, tidyPages pages.
func TidyStep(ctx context.Context, tx *engine.Tx) (bool, error) {
	return mergeStepTx(ctx, tx, "records_fts", tidyPages)
}

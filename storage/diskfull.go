package storage

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hearth-memory/hearth/storage/internal/engine"
	"github.com/hearth-memory/hearth/storage/screen"
)

// A full disk (issue #21): the engine refuses the writes with Full and
// counts them in memory, as the audit cannot be written meanwhile; once a
// write succeeds again, the usage flusher (usagebuf.go) writes one audit
// row with the count.

// recoverFull writes the audit row of the current full-disk episode, if
// there is one: the refusals counted, by operation, and when. Its success
// is what ends the episode; on a disk still full it fails with Full and the
// episode goes on.
func (db *DB) recoverFull(ctx context.Context) error {
	if db.lite == nil {
		return nil // PostgreSQL: no episode (DiskFull)
	}
	counts, since, last, ok := db.lite.FullEpisode()
	if !ok {
		return nil
	}

	detail := fullDetail(counts, since, last)
	err := db.writeGrouped(ctx, engine.OpRecovered, func(tx *txn) error {
		return insertAuditTx(ctx, tx, AuditEntry{Client: SystemClient, Action: ActionRefuseDiskFull, Detail: screen.Redact(detail)})
	})
	if err != nil {
		return err
	}
	// Refusals counted while the row was written belong to the next row.
	db.lite.FullRecorded(counts, last)
	return nil
}

// fullDetail words a full-disk episode for its audit row, e.g. "42 writes
// refused for a full disk from 2026-12-01T10:00:00Z to
// 2026-12-01T10:05:00Z (store 40, flush usage 2)".
func fullDetail(counts map[string]int, since, last time.Time) string {
	total := 0
	ops := make([]string, 0, len(counts))
	for op, n := range counts {
		total += n
		ops = append(ops, op)
	}
	slices.SortFunc(ops, func(a, b string) int {
		if c := counts[b] - counts[a]; c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	var by []string
	for _, op := range ops {
		by = append(by, fmt.Sprintf("%s %d", op, counts[op]))
	}
	s := fmt.Sprintf("%d writes refused for a full disk from %s to %s", total,
		since.UTC().Format(time.RFC3339), last.UTC().Format(time.RFC3339))
	if len(by) > 0 {
		s += " (" + strings.Join(by, ", ") + ")"
	}
	return s
}

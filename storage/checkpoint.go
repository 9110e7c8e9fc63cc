package storage

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"
)

// The WAL's size (issue #21). SQLite's automatic checkpoint (PASSIVE, once
// the WAL passes 1000 pages) copies pages back into the database but can
// start the WAL over only at a moment when no reader is using it. Under
// steady writes with steady readers that moment may never come, and the
// WAL grows without bound: measured here with 8 writers and 8 readers, it
// passed 120 MB in 90 s beside a 23 MB database. So the writer loop looks
// at the WAL's size between groups, at most every walCheckEvery, and once
// it passes walLimit runs a TRUNCATE checkpoint: it copies what is left,
// waits for the readers of older snapshots to finish while new ones read
// from the database, and truncates the file to zero (see checkpoint for
// why it takes several attempts under steady reads). Writes wait
// meanwhile, at most walBusy; reads do not. A checkpoint that cannot
// finish in that time (a long read held on, or the disk is full) is tried
// again only after walRetry.
const (
	walLimit      = 16 << 20
	walCheckEvery = time.Second
	walBusy       = time.Second
	walAttempt    = 50 * time.Millisecond
	walRetry      = 30 * time.Second
)

// walPolicy is the writer loop's checkpoint state and its figures.
type walPolicy struct {
	// limit and every are walLimit and walCheckEvery but in tests.
	limit int64
	every time.Duration
	next  time.Time // the loop's alone: when it may look at the WAL again

	mu    sync.Mutex
	stats CheckpointStats
}

// CheckpointStats are the figures of the checkpoint policy since open.
type CheckpointStats struct {
	// WALBytes is the WAL's size when the loop last looked.
	WALBytes int64
	// Count is how many checkpoints ran; Unfinished how many of them could
	// not truncate the WAL (readers held on, or an error).
	Count, Unfinished int
	// Last, Max and Total are their durations; LastAt when the last ran.
	Last, Max, Total time.Duration
	LastAt           time.Time
}

// CheckpointStats returns the checkpoint policy's figures.
func (db *DB) CheckpointStats() CheckpointStats {
	db.wal.mu.Lock()
	defer db.wal.mu.Unlock()
	return db.wal.stats
}

// afterWrite runs in the writer loop after each group: it applies the WAL
// policy. A damaged file is left alone: nothing is committed to it, and a
// checkpoint would write into it.
func (db *DB) afterWrite() {
	now := time.Now()
	if now.Before(db.wal.next) || db.damaged.Load() != nil {
		return
	}
	db.wal.next = now.Add(db.wal.every)
	fi, err := os.Stat(db.path + "-wal")
	if err != nil {
		return
	}
	size := fi.Size()
	db.wal.mu.Lock()
	db.wal.stats.WALBytes = size
	db.wal.mu.Unlock()
	if size < db.wal.limit {
		return
	}
	start := time.Now()
	busy, err := db.checkpoint()
	took := time.Since(start)
	unfinished := err != nil || busy
	if unfinished {
		db.wal.next = time.Now().Add(walRetry)
	} else {
		size = 0
	}
	db.wal.mu.Lock()
	defer db.wal.mu.Unlock()
	s := &db.wal.stats
	s.WALBytes = size
	s.Count++
	if unfinished {
		s.Unfinished++
	}
	s.Last, s.LastAt = took, start
	s.Max = max(s.Max, took)
	s.Total += took
}

// checkpoint runs TRUNCATE checkpoints on the writer's connection until
// one finishes or walBusy has passed, and reports whether readers kept it
// from finishing. One attempt gives up as soon as a second reader of an
// older snapshot is in its way (SQLite waits for one at most), and a
// steady stream of searches nearly always has one; but no write commits
// while the loop retries, so the readers of older snapshots finish, new
// ones read the database file once the WAL is copied back, and a later
// attempt gets through. Each attempt waits at most walAttempt.
func (db *DB) checkpoint() (busy bool, err error) {
	ctx := context.Background()
	conn, err := db.writer.Conn(ctx)
	if err != nil {
		return false, err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, fmt.Sprintf(`PRAGMA busy_timeout = %d`, walAttempt.Milliseconds())); err != nil {
		return false, err
	}
	// The writer's own busy timeout comes back whatever happens.
	defer conn.ExecContext(ctx, `PRAGMA `+writerPragmas[0])
	deadline := time.Now().Add(walBusy)
	for {
		var b, frames, copied int
		if err := conn.QueryRowContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&b, &frames, &copied); err != nil {
			return false, err
		}
		if b == 0 {
			return false, nil
		}
		if time.Now().After(deadline) {
			return true, nil
		}
	}
}

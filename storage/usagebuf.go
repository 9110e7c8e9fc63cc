package storage

import (
	"context"
	"time"

	"github.com/hearth-memory/hearth/storage/flush"
)

// UsageFlushInterval is the longest a counted use waits in memory before
// the single writer stores it (docs/design.md R-K5 counters, issue #16): a kill of
// the process (SIGKILL) loses at most the uses counted in the last
// interval; a clean Close stores them all. A power loss also loses what the
// operating system had not yet written back: commits do not wait for the
// disk (synchronous=NORMAL; docs/design.md, "Buffered writes").
const UsageFlushInterval = time.Second

// maxPendingUses starts a flush early when this many records wait.
const maxPendingUses = 2048

// use is what one record has been counted since the last flush.
type use struct {
	returned, fetched         int
	lastReturned, lastFetched int64 // unix ms, 0 when none
}

// uses are counted uses by record id, waiting for the writer.
type uses = map[string]*use

// newUses returns the buffer of counted uses: its loop stores them every
// UsageFlushInterval, or sooner when maxPendingUses records wait, until
// Close stops it and stores what is left. A write that fails puts its uses
// back for the next round, so each is stored exactly once.
//
// While the disk is full the loop backs off, from fullRetryMin doubling to
// fullRetryMax, and each round first tries to write the full-disk
// episode's audit row (recoverFull): that write is the probe that finds
// space back when no client writes. A write that succeeds meanwhile wakes
// it at once. While the file is damaged it stores nothing: the store is
// read-only, and the uses wait in memory.
func (db *DB) newUses() *flush.Buffer[uses] {
	return flush.New(flush.Policy[uses]{
		New:     func() uses { return uses{} },
		Write:   db.writeUses,
		Size:    maxPendingUses,
		Requeue: requeueUses,
		Every:   UsageFlushInterval,
		Before:  db.recoverFull,
		Backoff: func(prev time.Duration, err error) time.Duration {
			if ErrorCode(err) == Full {
				return db.fullRetry(prev)
			}
			return 0
		},
		Paused: func() bool { return db.Damage() != nil },
		Wake:   db.fullWake,
	})
}

// NoteReturned counts the records in ids (a repeated id once) as returned by
// a search, recall or context packet now, in memory: no read waits for the
// writer to count. The flusher stores the counts within UsageFlushInterval.
func (db *DB) NoteReturned(ids []string) { db.note(ids, false) }

// NoteFetched counts the records in ids (a repeated id once) as fetched by
// memory_get now, in memory, like NoteReturned.
func (db *DB) NoteFetched(ids []string) { db.note(ids, true) }

func (db *DB) note(ids []string, fetched bool) {
	ids = uniq(ids)
	if len(ids) == 0 {
		return
	}
	at := db.now().UnixMilli()
	db.uses.Add(func(pending *uses) int {
		for _, id := range ids {
			u := (*pending)[id]
			if u == nil {
				u = &use{}
				(*pending)[id] = u
			}
			if fetched {
				u.fetched++
				u.lastFetched = max(u.lastFetched, at)
			} else {
				u.returned++
				u.lastReturned = max(u.lastReturned, at)
			}
		}
		return len(*pending)
	})
}

// FlushUsage stores every use counted so far in one write transaction of
// the single writer, its own (writeOwnTx): a flush changes a page of usage
// per few records counted. Unknown ids (records purged meanwhile) are
// skipped.
// When the write fails, the uses go back to memory for the next flush, so
// each is stored exactly once.
func (db *DB) FlushUsage(ctx context.Context) error { return db.uses.Flush(ctx) }

// writeUses stores batch (FlushUsage).
func (db *DB) writeUses(ctx context.Context, batch uses) error {
	return db.writeOwnTx(ctx, opFlushUsage, func(tx *txn) error {
		for id, u := range batch {
			if _, err := tx.ExecContext(ctx, `
				INSERT INTO usage (record_id, returned, fetched, last_returned_at, last_fetched_at)
				SELECT id, ?2, ?3, NULLIF(CAST(?4 AS BIGINT), 0), NULLIF(CAST(?5 AS BIGINT), 0) FROM records WHERE id = ?1
				ON CONFLICT (record_id) DO UPDATE SET
					returned = usage.returned + excluded.returned,
					fetched = usage.fetched + excluded.fetched,
					last_returned_at = CASE WHEN excluded.last_returned_at IS NULL OR usage.last_returned_at >= excluded.last_returned_at
						THEN usage.last_returned_at ELSE excluded.last_returned_at END,
					last_fetched_at = CASE WHEN excluded.last_fetched_at IS NULL OR usage.last_fetched_at >= excluded.last_fetched_at
						THEN usage.last_fetched_at ELSE excluded.last_fetched_at END`,
				id, u.returned, u.fetched, u.lastReturned, u.lastFetched); err != nil {
				return classify("flush usage", err)
			}
		}
		return nil
	})
}

// requeueUses adds the uses of a batch whose write failed to those
// counted meanwhile and returns how many records wait.
func requeueUses(pending *uses, failed uses) int {
	for id, u := range failed {
		p := (*pending)[id]
		if p == nil {
			(*pending)[id] = u
			continue
		}
		p.returned += u.returned
		p.fetched += u.fetched
		p.lastReturned = max(p.lastReturned, u.lastReturned)
		p.lastFetched = max(p.lastFetched, u.lastFetched)
	}
	return len(*pending)
}

// pendingUse returns what id has been counted but not yet stored.
func (db *DB) pendingUse(id string) (p use) {
	db.uses.Peek(func(pending uses) {
		if u := pending[id]; u != nil {
			p = *u
		}
	})
	return p
}

// addPending adds to u what id has been counted but not yet stored, so a
// read of the counters sees every use counted so far.
func (db *DB) addPending(id string, u *Usage) {
	p := db.pendingUse(id)
	u.Returned += p.returned
	u.Fetched += p.fetched
	if at := time.UnixMilli(p.lastReturned).UTC(); p.lastReturned > 0 && at.After(u.LastReturnedAt) {
		u.LastReturnedAt = at
	}
	if at := time.UnixMilli(p.lastFetched).UTC(); p.lastFetched > 0 && at.After(u.LastFetchedAt) {
		u.LastFetchedAt = at
	}
}

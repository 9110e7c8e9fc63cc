package storage

import (
	"context"
	"sync"
	"time"
)

// UsageFlushInterval is the longest a counted use waits in memory before
// the single writer stores it (docs/design.md R-K5 counters, issue #16): a kill of
// the process (SIGKILL) loses at most the uses counted in the last
// interval; a clean Close stores them all. A power loss also loses what the
// operating system had not yet written back: commits do not wait for the
// disk (synchronous=NORMAL, DOCS.md "What a crash can lose").
const UsageFlushInterval = time.Second

// maxPendingUses starts a flush early when this many records wait.
const maxPendingUses = 2048

// use is what one record has been counted since the last flush.
type use struct {
	returned, fetched         int
	lastReturned, lastFetched int64 // unix ms, 0 when none
}

// usageBuffer accumulates counted uses in memory for the flusher.
type usageBuffer struct {
	mu      sync.Mutex
	pending map[string]*use
	kick    chan struct{} // a flush is due before the interval ends
	// flushing is held by a flush from taking the batch until its write
	// is done, and shared by Usage and History, which so never read a use that is
	// neither in memory nor stored: a checkpoint that holds reads back
	// while the flush waits its turn made that gap wide.
	flushing sync.RWMutex
}

func newUsageBuffer() *usageBuffer {
	return &usageBuffer{pending: map[string]*use{}, kick: make(chan struct{}, 1)}
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
	b := db.uses
	b.mu.Lock()
	for _, id := range ids {
		u := b.pending[id]
		if u == nil {
			u = &use{}
			b.pending[id] = u
		}
		if fetched {
			u.fetched++
			u.lastFetched = max(u.lastFetched, at)
		} else {
			u.returned++
			u.lastReturned = max(u.lastReturned, at)
		}
	}
	full := len(b.pending) >= maxPendingUses
	b.mu.Unlock()
	if full {
		select {
		case b.kick <- struct{}{}:
		default:
		}
	}
}

// FlushUsage stores every use counted so far in one write transaction of
// the single writer, its own (writeSolo): a flush changes a page of usage
// per few records counted. Unknown ids (records purged meanwhile) are
// skipped.
// When the write fails, the uses go back to memory for the next flush, so
// each is stored exactly once.
func (db *DB) FlushUsage(ctx context.Context) error {
	b := db.uses
	b.flushing.Lock()
	defer b.flushing.Unlock()
	b.mu.Lock()
	batch := b.pending
	b.pending = map[string]*use{}
	b.mu.Unlock()
	if len(batch) == 0 {
		return nil
	}
	err := db.writeSolo(ctx, opFlushUsage, func(tx *txn) error {
		for id, u := range batch {
			if _, err := tx.ExecContext(ctx, `
				INSERT INTO usage (record_id, returned, fetched, last_returned_at, last_fetched_at)
				SELECT id, ?2, ?3, NULLIF(?4, 0), NULLIF(?5, 0) FROM records WHERE id = ?1
				ON CONFLICT (record_id) DO UPDATE SET
					returned = returned + excluded.returned,
					fetched = fetched + excluded.fetched,
					last_returned_at = COALESCE(MAX(last_returned_at, excluded.last_returned_at), last_returned_at, excluded.last_returned_at),
					last_fetched_at = COALESCE(MAX(last_fetched_at, excluded.last_fetched_at), last_fetched_at, excluded.last_fetched_at)`,
				id, u.returned, u.fetched, u.lastReturned, u.lastFetched); err != nil {
				return classify("flush usage", err)
			}
		}
		return nil
	})
	if err != nil {
		b.mu.Lock()
		for id, u := range batch {
			p := b.pending[id]
			if p == nil {
				b.pending[id] = u
				continue
			}
			p.returned += u.returned
			p.fetched += u.fetched
			p.lastReturned = max(p.lastReturned, u.lastReturned)
			p.lastFetched = max(p.lastFetched, u.lastFetched)
		}
		b.mu.Unlock()
	}
	return err
}

// pendingUse returns what id has been counted but not yet stored.
func (db *DB) pendingUse(id string) use {
	b := db.uses
	b.mu.Lock()
	defer b.mu.Unlock()
	if u := b.pending[id]; u != nil {
		return *u
	}
	return use{}
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

// flushLoop stores counted uses every UsageFlushInterval, or sooner when
// many wait, until Close stops it; Close then flushes what is left.
//
// While the disk is full it backs off, from fullRetryMin doubling to
// fullRetryMax, and each round first tries to write the full-disk
// episode's audit row (recoverFull): that write is the probe that finds
// space back when no client writes. A write that succeeds meanwhile wakes
// it at once. While the file is damaged it stores nothing: the store is
// read-only, and the uses wait in memory.
func (db *DB) flushLoop() {
	defer close(db.flushDone)
	ctx := context.Background()
	t := time.NewTimer(UsageFlushInterval)
	defer t.Stop()
	backoff := time.Duration(0)
	for {
		select {
		case <-db.flushStop:
			return
		case <-t.C:
		case <-db.uses.kick:
			if backoff > 0 {
				continue // the timer still runs: no early try on a full disk
			}
		case <-db.lite.FullWake():
		}
		if !t.Stop() {
			select {
			case <-t.C:
			default:
			}
		}
		wait := UsageFlushInterval
		if db.lite.Damage() == nil {
			// A failure leaves the uses in memory for the next round.
			err := db.recoverFull(ctx)
			if err == nil {
				err = db.FlushUsage(ctx)
			}
			if ErrorCode(err) == Full {
				backoff = db.lite.FullRetry(backoff)
				wait = backoff
			} else {
				backoff = 0
			}
		}
		t.Reset(wait)
	}
}

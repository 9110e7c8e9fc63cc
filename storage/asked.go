package storage

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/hearth-memory/hearth/storage/screen"
)

// Recorded queries (docs/design.md R-W1) are written off the search path: RecordAsk
// and RecordUse only queue, and the single writer applies the queue in
// arrival order, in one transaction per batch, at most AskFlushDelay after
// the first entry waiting (at once when AskBatch wait). A search therefore
// never waits for a write of its own. Close flushes what waits; a process
// killed outright loses at most the batch not yet written.
const (
	AskFlushDelay = 100 * time.Millisecond
	AskBatch      = 256
	// askQueueMax bounds what waits while the writer is stuck; beyond it
	// entries are dropped and counted (AskStats).
	askQueueMax = 8192
)

// Ask is one search to record: where it was asked (the home namespace of
// its scope chain), by whom (client and session), the query as screened,
// and the ids of its full-text hits, best first. The session is kept as a
// keyed digest (sessionDigest), never as given. Only full-text hits are
// kept, so the demand signal does not move with the encoder (docs/design.md R-W2).
type Ask struct {
	Namespace string
	Client    string
	Session   string
	Query     screen.Text
	Hits      []string
}

// AskUse is a memory_get by client in session that returned ids: every recorded
// ask of that session not yet used whose hits hold one of them becomes used.
type AskUse struct {
	Client  string
	Session string
	IDs     []string
}

// AskStats counts what the queue did not write.
type AskStats struct {
	// Dropped entries found the queue full or closed; Failed were in a batch
	// whose write failed.
	Dropped, Failed int64
}

type askOp struct {
	at  time.Time
	ask *Ask
	use *AskUse
}

// askQueue holds asks and uses until the writer applies them.
type askQueue struct {
	mu      sync.Mutex
	ops     []askOp
	timer   *time.Timer
	closed  bool
	stats   AskStats
	onError func(error)

	flushMu sync.Mutex // one flush at a time, so batches apply in order
}

// RecordAsk queues a search to record. A query whose key is empty (no
// meaningful word) is skipped when the queue is applied.
func (db *DB) RecordAsk(a Ask) {
	a.Hits = uniq(a.Hits)
	db.asks.add(db, askOp{at: db.now(), ask: &a})
}

// RecordUse queues a memory_get's ids to mark the session's asks used.
func (db *DB) RecordUse(u AskUse) {
	u.IDs = uniq(u.IDs)
	if len(u.IDs) == 0 {
		return
	}
	db.asks.add(db, askOp{at: db.now(), use: &u})
}

// OnAskError sets the function told of a failed batch write (the batch is
// lost; nothing else is). Set it before the first RecordAsk.
func (db *DB) OnAskError(f func(error)) {
	db.asks.mu.Lock()
	defer db.asks.mu.Unlock()
	db.asks.onError = f
}

// AskStats returns the counts of entries the queue did not write.
func (db *DB) AskStats() AskStats {
	db.asks.mu.Lock()
	defer db.asks.mu.Unlock()
	return db.asks.stats
}

func (q *askQueue) add(db *DB, op askOp) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed || len(q.ops) >= askQueueMax {
		q.stats.Dropped++
		return
	}
	q.ops = append(q.ops, op)
	switch {
	case len(q.ops) == AskBatch:
		go db.flushAsks(context.Background())
	case q.timer == nil:
		q.timer = time.AfterFunc(AskFlushDelay, func() { db.flushAsks(context.Background()) })
	}
}

// take removes and returns what waits, and stops the timer.
func (q *askQueue) take() []askOp {
	q.mu.Lock()
	defer q.mu.Unlock()
	ops := q.ops
	q.ops = nil
	if q.timer != nil {
		q.timer.Stop()
		q.timer = nil
	}
	return ops
}

// FlushAsks writes every queued ask and use now, in arrival order, and
// returns the write's error (the batch is then lost and counted as failed).
// Tests and benchmarks call it to read what they recorded.
func (db *DB) FlushAsks(ctx context.Context) error {
	return db.flushAsks(ctx)
}

func (db *DB) flushAsks(ctx context.Context) error {
	db.asks.flushMu.Lock()
	defer db.asks.flushMu.Unlock()
	ops := db.asks.take()
	if len(ops) == 0 {
		return nil
	}
	err := db.write(ctx, opRecordAsks, func(tx *txn) error {
		for _, op := range ops {
			var err error
			if op.ask != nil {
				err = db.askTx(ctx, tx, op.at, op.ask)
			} else {
				err = db.useTx(ctx, tx, op.use)
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		db.asks.mu.Lock()
		db.asks.stats.Failed += int64(len(ops))
		onError := db.asks.onError
		db.asks.mu.Unlock()
		if onError != nil {
			onError(fmt.Errorf("storage: %d recorded queries lost: %w", len(ops), err))
		}
	}
	return err
}

// closeAsks flushes what waits and refuses later entries. Close calls it
// before closing the writer.
func (db *DB) closeAsks() error {
	db.asks.mu.Lock()
	db.asks.closed = true
	db.asks.mu.Unlock()
	return db.flushAsks(context.Background())
}

// askTx records one ask under its question, making the question when it
// is the first of its key in the namespace.
func (db *DB) askTx(ctx context.Context, tx *txn, at time.Time, a *Ask) error {
	key := QuestionKey(a.Query.String())
	if key == "" {
		return nil
	}
	seq, err := db.questionSeqTx(ctx, tx, a.Namespace, key, a.Query.String())
	if err != nil {
		return err
	}
	hits := topicsJSON(a.Hits) // a JSON array of strings, [] when none
	if _, err := tx.ExecContext(ctx, `
		INSERT INTO asked (question, at, client, session, query, hits) VALUES (?, ?, ?, ?, ?, ?)`,
		seq, at.UnixMilli(), a.Client, sessionDigest(db.sessionKey, a.Session), questionText(a.Query.String()), hits,
	); err != nil {
		return classify("record ask", err)
	}
	return nil
}

// useTx marks used the session's unused asks whose hits hold one of u.IDs.
func (db *DB) useTx(ctx context.Context, tx *txn, u *AskUse) error {
	if _, err := tx.ExecContext(ctx, `
		UPDATE asked SET used = 1
		WHERE client = ?1 AND session = ?2 AND used = 0
			AND EXISTS (SELECT 1 FROM json_each(asked.hits) AS h WHERE h.value IN (SELECT value FROM json_each(?3)))`,
		u.Client, sessionDigest(db.sessionKey, u.Session), jsonList(u.IDs),
	); err != nil {
		return classify("record use", err)
	}
	return nil
}

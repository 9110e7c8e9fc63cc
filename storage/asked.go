package storage

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/hearth-memory/hearth/storage/flush"
	"github.com/hearth-memory/hearth/storage/internal/questions"
	"github.com/hearth-memory/hearth/storage/internal/sessions"
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
// keyed digest (sessions.Digest), never as given. Only full-text hits are
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

// askQueue holds asks and uses until the writer applies them, and counts
// what it did not write.
type askQueue struct {
	buf *flush.Buffer[[]askOp]

	mu      sync.Mutex
	stats   AskStats
	onError func(error)
}

// newAsks returns the queue of recorded queries: a batch is written
// AskFlushDelay after its first entry, or at once when AskBatch wait, one
// batch at a time so that they apply in order; a batch whose write fails
// is lost and counted.
func (db *DB) newAsks() *askQueue {
	q := &askQueue{}
	q.buf = flush.New(flush.Policy[[]askOp]{
		New:   func() []askOp { return nil },
		Write: db.writeAsks,
		Size:  AskBatch,
		Max:   askQueueMax,
		Delay: func([]askOp) time.Duration { return AskFlushDelay },
		Lost: func(_ []askOp, n int, err error) {
			q.mu.Lock()
			q.stats.Failed += int64(n)
			onError := q.onError
			q.mu.Unlock()
			if onError != nil {
				onError(fmt.Errorf("storage: %d recorded queries lost: %w", n, err))
			}
		},
	})
	return q
}

// RecordAsk queues a search to record. A query whose key is empty (no
// meaningful word) is skipped when the queue is applied.
func (db *DB) RecordAsk(a Ask) {
	a.Hits = uniq(a.Hits)
	db.asks.add(askOp{at: db.now(), ask: &a})
}

// RecordUse queues a memory_get's ids to mark the session's asks used.
func (db *DB) RecordUse(u AskUse) {
	u.IDs = uniq(u.IDs)
	if len(u.IDs) == 0 {
		return
	}
	db.asks.add(askOp{at: db.now(), use: &u})
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

// add queues op, or counts it dropped when the queue is full or closed.
func (q *askQueue) add(op askOp) {
	if !q.buf.Add(func(ops *[]askOp) int { *ops = append(*ops, op); return len(*ops) }) {
		q.mu.Lock()
		q.stats.Dropped++
		q.mu.Unlock()
	}
}

// FlushAsks writes every queued ask and use now, in arrival order, and
// returns the write's error (the batch is then lost and counted as failed).
// Tests and benchmarks call it to read what they recorded.
func (db *DB) FlushAsks(ctx context.Context) error { return db.asks.buf.Flush(ctx) }

// writeAsks applies ops in one transaction, in their order.
func (db *DB) writeAsks(ctx context.Context, ops []askOp) error {
	return db.writeGrouped(ctx, opRecordAsks, func(tx *txn) error {
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
		seq, at.UnixMilli(), a.Client, sessions.Digest(db.sessionKey, a.Session), questions.Text(a.Query.String()), hits,
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
		u.Client, sessions.Digest(db.sessionKey, u.Session), jsonList(u.IDs),
	); err != nil {
		return classify("record use", err)
	}
	return nil
}

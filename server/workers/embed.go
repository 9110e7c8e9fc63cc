package workers

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"

	"github.com/hearth-memory/hearth/server/encoder"
	"github.com/hearth-memory/hearth/server/retrieval"
	"github.com/hearth-memory/hearth/storage"
)

// DefaultEmbedBatch is how many records one embedding call of a pass
// carries (the encoder splits it into requests of its MaxBatch).
const DefaultEmbedBatch = 128

// EmbedderConfig is what an Embedder runs with.
type EmbedderConfig struct {
	DB      *storage.DB
	Encoder *encoder.Encoder
	Index   *retrieval.Index
	// Batch is how many records one Embed call carries (DefaultEmbedBatch).
	Batch int
	Log   *slog.Logger
}

// Embedder keeps record vectors current (docs/design.md R-M10). Each Kick (the
// workers' poll calls it) lets the encoder probe when its last probe is 30 s
// old (encoder.Poll), and when the encoder is live and something may need
// embedding — at start, after any store or edit, when the encoder comes
// back — runs a pass: it reads the model snapshot (once, or when a batch
// finds it changed: every vector made under another is then stale), and
// embeds the live records whose vector is missing or stale, oldest first,
// in batches, storing each batch as it arrives.
type Embedder struct {
	db    *storage.DB
	enc   *encoder.Encoder
	index *retrieval.Index
	batch int
	log   *slog.Logger
	kick  chan struct{}

	stop context.CancelFunc
	done chan struct{}

	mu       sync.Mutex
	wasLive  bool
	seen     int64 // the feed version after the last pass
	passed   bool  // a pass has run to its end
	embedded int64
}

// NewEmbedder returns an Embedder; it does nothing until Start.
func NewEmbedder(cfg EmbedderConfig) *Embedder {
	e := &Embedder{db: cfg.DB, enc: cfg.Encoder, index: cfg.Index, batch: cfg.Batch, log: cfg.Log, kick: make(chan struct{}, 1)}
	if e.batch <= 0 {
		e.batch = DefaultEmbedBatch
	}
	if e.log == nil {
		e.log = slog.Default()
	}
	return e
}

// Kick asks for a probe and, if there may be work, a pass. It never
// blocks: kicks that arrive while one waits are one kick.
func (e *Embedder) Kick() {
	select {
	case e.kick <- struct{}{}:
	default:
	}
}

// Start runs the embedder in the background until Stop; it kicks once at
// start.
func (e *Embedder) Start(ctx context.Context) {
	ctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	e.stop, e.done = stop, make(chan struct{})
	go func() {
		defer close(e.done)
		e.Kick()
		for {
			select {
			case <-ctx.Done():
				return
			case <-e.kick:
			}
			if err := e.Step(ctx); err != nil && ctx.Err() == nil {
				e.log.WarnContext(ctx, "embedding pass", "err", err)
			}
		}
	}()
}

// Stop stops the embedder and waits for it; a batch in flight is dropped.
func (e *Embedder) Stop() {
	if e.stop == nil {
		return
	}
	e.stop()
	<-e.done
}

// Step is what one kick does: probe when due, then a pass when the encoder
// is live and something may need embedding.
func (e *Embedder) Step(ctx context.Context) error {
	if !e.enc.Configured() {
		return nil
	}
	e.enc.Poll(ctx)
	live := e.enc.Live()
	e.mu.Lock()
	back := live && !e.wasLive
	e.wasLive = live
	seen, passed := e.seen, e.passed
	e.mu.Unlock()
	if !live {
		return nil
	}
	version, err := e.db.VectorVersion(ctx)
	if err != nil {
		return err
	}
	if passed && !back && version == seen {
		return nil
	}
	_, err = e.Pass(ctx)
	return err
}

// Pass embeds every live record whose vector is missing or stale and
// returns how many vectors it stored. It stops at the first failed call
// (the next kick tries again).
func (e *Embedder) Pass(ctx context.Context) (int, error) {
	model := e.enc.Model()
	snapshot := e.enc.Snapshot()
	if snapshot == "" {
		// Read when embedding, never from a probe: with llama-swap this
		// loads the model (R-M9).
		s, err := e.enc.ReadSnapshot(ctx)
		if err != nil {
			return 0, err
		}
		snapshot = s
	}
	if err := e.index.SetKey(ctx, model, snapshot); err != nil {
		return 0, err
	}
	if err := e.index.Sync(ctx); err != nil {
		return 0, err
	}
	stored := 0
	var last []string
	for ctx.Err() == nil {
		ids := e.index.Todo(e.batch)
		if len(ids) == 0 || slices.Equal(ids, last) {
			// Done; or the same records again, whose vectors did not take
			// (each edited again meanwhile): the next change brings them.
			break
		}
		last = ids
		n, err := e.embed(ctx, ids)
		stored += n
		if errors.Is(err, encoder.ErrSnapshotChanged) {
			// Every vector of the old snapshot is stale now: rekey.
			if err := e.index.SetKey(ctx, model, e.enc.Snapshot()); err != nil {
				return stored, err
			}
			last = nil
			continue
		}
		if err != nil {
			return stored, err
		}
		if err := e.index.Sync(ctx); err != nil {
			return stored, err
		}
	}
	if ctx.Err() != nil {
		return stored, ctx.Err()
	}
	e.mu.Lock()
	// Every change up to the index's version was seen by this pass; one
	// after it brings the next kick's pass.
	e.seen = e.index.Version()
	e.passed = true
	e.embedded += int64(stored)
	e.mu.Unlock()
	return stored, nil
}

// embed embeds the records ids names and stores their vectors, keyed by
// the model and snapshot the batch was made under.
func (e *Embedder) embed(ctx context.Context, ids []string) (int, error) {
	recs, err := e.db.Get(ctx, ids)
	if err != nil {
		return 0, err
	}
	texts := make([]string, len(recs))
	for i, r := range recs {
		texts[i] = encoder.RecordText(r.Title, r.Content)
	}
	b, err := e.enc.Embed(ctx, texts)
	if err != nil {
		return 0, err
	}
	if model, snapshot := e.index.Key(); b.Snapshot != snapshot || b.Model != model {
		if err := e.index.SetKey(ctx, b.Model, b.Snapshot); err != nil {
			return 0, err
		}
	}
	es := make([]storage.Embedding, len(recs))
	for i, r := range recs {
		es[i] = storage.Embedding{RecordID: r.ID, Digest: encoder.Digest(b.Model, b.Snapshot, texts[i]),
			Model: b.Model, Snapshot: b.Snapshot, Vector: b.Vectors[i]}
	}
	return e.db.PutEmbeddings(ctx, es)
}

// OnPoll has f called at every poll of the runner (Config.Poll, a second
// by default), before it looks for due jobs; f must not block (the
// embedder's Kick). Call it before Start.
func (w *Workers) OnPoll(f func()) { w.onPoll = append(w.onPoll, f) }

// Embedded returns how many vectors the embedder stored since it started.
func (e *Embedder) Embedded() int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.embedded
}

package workers_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/hearth-memory/hearth/server/encoder"
	"github.com/hearth-memory/hearth/server/models/modeltest"
	"github.com/hearth-memory/hearth/server/retrieval"
	"github.com/hearth-memory/hearth/server/workers"
	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/storagetest"
)

type embedClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *embedClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *embedClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// TestEmbedder_Step checks when the embedder works (R-M10): at start, after
// a store or an edit, and when the encoder answers a probe again after
// being down; never when nothing changed; and it probes only every 30 s.
func TestEmbedder_Step(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := storagetest.Open(t)
	srv := modeltest.New(t, modeltest.LlamaServer, modeltest.Model{Path: "/models/emb.gguf", Dim: 8})
	clock := &embedClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	enc, err := encoder.New(encoder.Config{URL: srv.URL, Model: "qwen3-emb-0.6b", Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	idx := retrieval.NewIndex(db)
	emb := workers.NewEmbedder(workers.EmbedderConfig{DB: db, Encoder: enc, Index: idx})
	store := func(title string) *storage.Record {
		return storagetest.Store(t, db, storage.NewRecord{Namespace: "global", Type: storage.TypeDecision,
			Title: storagetest.Text(t, title), Content: storagetest.Text(t, "content"), Confidence: 0.8,
			Writer: "claude-code", Source: storage.SourceStore, Status: storage.StatusActive})
	}
	step := func(what string) {
		t.Helper()
		if err := emb.Step(ctx); err != nil {
			t.Fatalf("%s: Step: %v", what, err)
		}
	}
	counts := func() retrieval.Counts {
		t.Helper()
		if err := idx.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		c, ok := idx.Counts()
		if !ok {
			t.Fatal("Counts: the index cannot tell the vectors' states")
		}
		return c
	}
	store("a")
	store("b")

	step("start")
	if c := counts(); c.Current != 2 || c.Missing != 0 {
		t.Fatalf("after the first step: %+v, want 2 current", c)
	}
	embeds := srv.Count(srv.EmbedPath())

	step("nothing changed")
	if got := srv.Count(srv.EmbedPath()); got != embeds {
		t.Errorf("a step with nothing changed made %d embedding requests", got-embeds)
	}

	rec := store("c")
	step("after a store")
	content := storagetest.Text(t, "edited")
	if _, err := db.Update(ctx, rec.ID, rec.Revision, storage.Changes{Content: &content}, "claude-code"); err != nil {
		t.Fatal(err)
	}
	step("after an edit")
	if c := counts(); c.Current != 3 || c.Stale+c.Missing != 0 {
		t.Errorf("after a store and an edit: %+v, want 3 current", c)
	}

	// Down: the pass fails and marks the encoder down; later steps do
	// nothing until a probe, 30 s on, finds it back.
	srv.Down()
	store("d")
	if err := emb.Step(ctx); err == nil {
		t.Errorf("a pass against a down encoder reported no error")
	}
	if enc.Live() {
		t.Fatalf("the encoder is live after a call it did not answer")
	}
	srv.Up(t)
	step("down, probe not due")
	if c := counts(); c.Missing != 1 {
		t.Errorf("before the probe is due: %+v, want 1 missing", c)
	}
	clock.Add(29 * time.Second)
	step("29 s")
	if enc.Live() {
		t.Errorf("probed before 30 s")
	}
	clock.Add(time.Second)
	step("30 s")
	if c := counts(); !enc.Live() || c.Current != 4 || c.Missing != 0 {
		t.Errorf("after the probe at 30 s: live %v, %+v; want 4 current", enc.Live(), c)
	}
	if emb.Embedded() != 5 {
		t.Errorf("Embedded = %d, want 5 (a, b, c, c edited, d)", emb.Embedded())
	}
}

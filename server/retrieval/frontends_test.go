package retrieval_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hearth-memory/hearth/server/ranking"
	"github.com/hearth-memory/hearth/server/retrieval"
	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/storagetest"
)

// frontEnds returns two rigs on one new PostgreSQL database, each with
// its own store handle, encoder client, vector index, embedder and
// pipeline, as two hearth serve processes have, sharing one encoder
// server (docs/postgres.md, "Vectors"). Without PostgreSQL the test skips
// (pgtest), unless HEARTH_REQUIRE_POSTGRES is set.
func frontEnds(t *testing.T, dim int) (a, b *rig) {
	t.Helper()
	url := storagetest.URL(t)
	srv := newEncoderServer(t, dim)
	a = rigOn(t, storagetest.OpenURL(t, url), srv, dim, 2*time.Second)
	b = rigOn(t, storagetest.OpenURL(t, url), srv, dim, 2*time.Second)
	return a, b
}

// sameRanking fails t unless got ranked as want did: the same mode and
// hits, in the same order, with the same scores, whys and cosines.
func sameRanking(t *testing.T, what string, got, want retrieval.Result) {
	t.Helper()
	if got.Mode != want.Mode || !slices.Equal(ids(got.Hits), ids(want.Hits)) {
		t.Fatalf("%s: front end B ranks %s %v, A %s %v", what, got.Mode, ids(got.Hits), want.Mode, ids(want.Hits))
	}
	for i, h := range got.Hits {
		w := want.Hits[i]
		if h.Why != w.Why || h.Score != w.Score || h.HasCosine != w.HasCosine || h.Cosine != w.Cosine {
			t.Errorf("%s: #%d %s on B: %q score %v cosine %v (%v); on A: %q score %v cosine %v (%v)",
				what, i+1, h.Record.Title, h.Why, h.Score, h.Cosine, h.HasCosine, w.Why, w.Score, w.Cosine, w.HasCosine)
		}
	}
}

// run ranks q on r, failing t on an error.
func (r *rig) run(t *testing.T, q retrieval.Query) retrieval.Result {
	t.Helper()
	res, err := r.pipe.Run(context.Background(), q)
	if err != nil {
		t.Fatalf("Run(%q, mode %q): %v", q.Text, q.Mode, err)
	}
	return res
}

// TestCosine_FrontEnds: two front ends on one PostgreSQL database. A record
// stored and embedded through front end A is found by front end B's vector
// search, B's index having read A's writes from the change feed; B's
// hybrid search (full text and cosine, fused) ranks as A's does; B's
// embedder finds nothing left to embed; a record whose text changes
// through A is not ranked by its old vector on B, and by its new one once
// A re-embeds it; a record forgotten, then purged, through A leaves B's
// results at once.
func TestCosine_FrontEnds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, b := frontEnds(t, 48)
	now := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	a.db.Now = func() time.Time { return now }
	var recs []*storage.Record
	for _, rc := range webhookRecords {
		recs = append(recs, a.store(t, "global", rc[0], rc[1]))
	}
	if n := a.pass(t); n != len(recs) {
		t.Fatalf("A's pass stored %d vectors, want %d", n, len(recs))
	}
	// B's embedder loads B's index from the feed: every vector A stored
	// is current there, and B embeds nothing again.
	if n := b.pass(t); n != 0 {
		t.Errorf("B's pass stored %d vectors, want 0: A embedded them all", n)
	}
	if c, ok := b.idx.Counts(); !ok || c != (retrieval.Counts{Current: len(recs)}) {
		t.Errorf("B's index counts %+v (loaded %v), want %d current", c, ok, len(recs))
	}

	q := retrieval.Query{Text: "retry webhooks", Chain: []string{"global"}, Depth: 20}
	cosine := q
	cosine.Mode = ranking.ModeCosine
	check := func(what string, want []*storage.Record) {
		t.Helper()
		hybrid := b.run(t, q)
		if hybrid.Mode != ranking.ModeRRF || hybrid.Fallback != nil {
			t.Fatalf("%s: B ranks %s (fallback %v), want rrf", what, hybrid.Mode, hybrid.Fallback)
		}
		sameRanking(t, what+", hybrid", hybrid, a.run(t, q))
		alone := b.run(t, cosine)
		sameRanking(t, what+", cosine", alone, a.run(t, cosine))
		var got []string
		for _, h := range alone.Hits {
			got = append(got, h.Record.ID)
			at := slices.IndexFunc(want, func(r *storage.Record) bool { return r.ID == h.Record.ID })
			if at < 0 {
				continue // reported below
			}
			rec := want[at]
			if !h.HasCosine || math.Abs(h.Cosine-b.want(q.Text, rec)) > 1e-6 {
				t.Errorf("%s: %s has cosine %v (%v) on B, want %v, its current text's", what, h.Record.Title, h.Cosine, h.HasCosine, b.want(q.Text, rec))
			}
		}
		wantIDs := make([]string, len(want))
		for i, r := range want {
			wantIDs[i] = r.ID
		}
		slices.Sort(got)
		slices.Sort(wantIDs)
		if !slices.Equal(got, wantIDs) {
			t.Errorf("%s: B's cosine list holds %v, want %v", what, got, wantIDs)
		}
	}
	check("stored through A", recs)

	// A new text for recs[0] through A: its vector is stale on both until
	// A re-embeds it, so neither ranks by the old one.
	content := storagetest.Text(t, "webhook deliveries that fail are retried with jittered backoff")
	up, err := a.db.Update(ctx, recs[0].ID, recs[0].Revision, storage.Changes{Content: &content}, "claude-code")
	if err != nil {
		t.Fatal(err)
	}
	if res := b.run(t, q); res.Mode != ranking.ModeFTS || !errors.Is(res.Fallback, retrieval.ErrNotCurrent) {
		t.Errorf("updated through A, not re-embedded: B ranks %s (fallback %v), want fts for want of a current vector", res.Mode, res.Fallback)
	}
	if _, err := b.pipe.Run(ctx, cosine); !errors.Is(err, retrieval.ErrNotCurrent) {
		t.Errorf("updated through A, not re-embedded: B's cosine list answers %v, want ErrNotCurrent", err)
	}
	if n := a.pass(t); n != 1 {
		t.Fatalf("A's pass after the update stored %d vectors, want 1", n)
	}
	recs[0] = up
	check("updated and re-embedded through A", recs)

	// Forgotten through A: gone from B's lists with its vector.
	if _, err := a.db.Forget(ctx, recs[1].ID, 0, storagetest.Text(t, "obsolete"), "claude-code"); err != nil {
		t.Fatal(err)
	}
	check("forgotten through A", []*storage.Record{recs[0], recs[2], recs[3]})

	// Purged through A (its row deleted): B's index drops the entry.
	now = now.Add(40 * 24 * time.Hour)
	if rep, err := a.db.Maintain(ctx, storage.Maintenance{Retention: 30 * 24 * time.Hour}); err != nil || rep.RecordsPurged != 1 {
		t.Fatalf("Maintain through A = %+v, %v; want one record purged", rep, err)
	}
	if err := b.idx.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if c, ok := b.idx.Counts(); !ok || c != (retrieval.Counts{Current: 3}) {
		t.Errorf("after the purge B's index counts %+v, want 3 current", c)
	}
	check("purged through A", []*storage.Record{recs[0], recs[2], recs[3]})
}

// TestCosine_FrontEndsStoring: two front ends store records at once, each
// running its embedder meanwhile, while each searches; at the end both
// indexes hold every record with its current vector, and both rank alike.
// The feed's versions grow in commit order across front ends
// (docs/postgres.md, "Triggers"), or an index that applied a later
// version first would never read an earlier one that committed after it.
func TestCosine_FrontEndsStoring(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, b := frontEnds(t, 32)
	const each = 24
	var wg sync.WaitGroup
	errc := make(chan error, 4)
	for name, r := range map[string]*rig{"A": a, "B": b} {
		var nrs []storage.NewRecord
		for i := range each {
			rc := webhookRecords[i%len(webhookRecords)]
			nrs = append(nrs, storage.NewRecord{Namespace: "global", Type: storage.TypeDecision,
				Title: storagetest.Text(t, fmt.Sprintf("%s (%s %d)", rc[0], name, i)), Content: storagetest.Text(t, rc[1]),
				Confidence: 0.8, Writer: "claude-code", Source: storage.SourceStore, Status: storage.StatusActive})
		}
		wg.Go(func() {
			for _, nr := range nrs {
				if _, err := r.db.Store(ctx, nr); err != nil {
					errc <- fmt.Errorf("store through %s: %w", name, err)
					return
				}
			}
		})
		wg.Go(func() {
			for range each / 4 {
				if _, err := r.emb.Pass(ctx); err != nil {
					errc <- fmt.Errorf("%s's pass: %w", name, err)
					return
				}
				if _, err := r.pipe.Run(ctx, retrieval.Query{Text: "retry webhooks", Chain: []string{"global"}, Depth: 20}); err != nil {
					errc <- fmt.Errorf("search on %s: %w", name, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	// A last pass on each embeds what the passes above left.
	a.pass(t)
	b.pass(t)
	for name, r := range map[string]*rig{"A": a, "B": b} {
		if err := r.idx.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		if c, ok := r.idx.Counts(); !ok || c != (retrieval.Counts{Current: 2 * each}) {
			t.Errorf("%s's index counts %+v (loaded %v), want %d current", name, c, ok, 2*each)
		}
	}
	q := retrieval.Query{Text: "retry webhooks", Chain: []string{"global"}, Depth: 20}
	res := b.run(t, q)
	if res.Mode != ranking.ModeRRF {
		t.Fatalf("B ranks %s (fallback %v), want rrf", res.Mode, res.Fallback)
	}
	sameRanking(t, "after storing at once", res, a.run(t, q))
	q.Mode = ranking.ModeCosine
	sameRanking(t, "after storing at once, cosine", b.run(t, q), a.run(t, q))
}

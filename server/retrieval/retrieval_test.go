package retrieval_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/hearth-memory/hearth/server/ranking"
	"github.com/hearth-memory/hearth/server/retrieval"
	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/storagetest"
)

// reversed is a second ranked list over the same store: full text read
// backwards, so fusion visibly differs from full text alone. err, when set,
// is what it answers instead.
type reversed struct {
	db  *storage.DB
	err error
}

func (reversed) Name() string { return "reversed" }

func (r reversed) Rank(ctx context.Context, q retrieval.Query) (retrieval.Ranked, error) {
	if r.err != nil {
		return retrieval.Ranked{}, r.err
	}
	res, err := retrieval.FTS{DB: r.db}.Rank(ctx, q)
	slices.Reverse(res.Hits)
	return res, err
}

func ids(hs []ranking.Hit) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = h.Record.ID
	}
	return out
}

func TestPipeline_Run(t *testing.T) {
	ctx := context.Background()
	db := storagetest.Open(t)
	for _, title := range []string{"retry webhooks with backoff", "webhooks deliver events", "backoff for failed deliveries", "unrelated cache note"} {
		storagetest.Store(t, db, storage.NewRecord{Title: storagetest.Text(t, title), Content: storagetest.Text(t, title)})
	}
	q := retrieval.Query{Text: "retry webhooks backoff", Chain: []string{"global"}, Depth: 20}
	res, err := retrieval.FTS{DB: db}.Rank(ctx, q)
	fts := res.Hits
	if err != nil || len(fts) != 3 {
		t.Fatalf("full text: %d hits, %v; want 3", len(fts), err)
	}

	t.Run("OKFullTextAlone", func(t *testing.T) {
		res, err := retrieval.New(db).Run(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		want := ranking.FTS(fts, q.Chain)
		if res.Mode != ranking.ModeFTS || !slices.Equal(ids(res.Hits), ids(want)) {
			t.Errorf("got %s %v, want fts %v", res.Mode, ids(res.Hits), ids(want))
		}
	})

	t.Run("OKFused", func(t *testing.T) {
		res, err := retrieval.New(db, reversed{db: db}).Run(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		back := slices.Clone(fts)
		slices.Reverse(back)
		want := ranking.Fuse(q.Chain, ranking.List{Name: "fts", Hits: fts}, ranking.List{Name: "reversed", Hits: back})
		if res.Mode != ranking.ModeRRF || !slices.Equal(ids(res.Hits), ids(want)) {
			t.Errorf("got %s %v, want rrf %v", res.Mode, ids(res.Hits), ids(want))
		}
		if res.Hits[0].Why != want[0].Why {
			t.Errorf("why = %q, want %q", res.Hits[0].Why, want[0].Why)
		}
	})

	t.Run("OKUnavailableFallsBack", func(t *testing.T) {
		res, err := retrieval.New(db, reversed{err: retrieval.ErrUnavailable}).Run(ctx, q)
		if err != nil || res.Mode != ranking.ModeFTS || len(res.Hits) != len(fts) {
			t.Errorf("got %s, %d hits, %v; want fts with %d hits", res.Mode, len(res.Hits), err, len(fts))
		}
	})

	t.Run("ErrList", func(t *testing.T) {
		boom := errors.New("boom")
		if _, err := retrieval.New(db, reversed{err: boom}).Run(ctx, q); !errors.Is(err, boom) {
			t.Errorf("got %v, want the list's error", err)
		}
	})

	t.Run("OKHubReachRanksAfterChain", func(t *testing.T) {
		storagetest.Store(t, db, storage.NewRecord{Namespace: "github/acme/api", Title: storagetest.Text(t, "webhooks retry"), Content: storagetest.Text(t, "x")})
		res, err := retrieval.New(db).Run(ctx, retrieval.Query{Text: "webhooks", Chain: []string{"global"}, AllRepositories: true, Depth: 20})
		if err != nil {
			t.Fatal(err)
		}
		var namespaces []string
		for _, h := range res.Hits {
			namespaces = append(namespaces, h.Record.Namespace)
		}
		if !slices.Contains(namespaces, "github/acme/api") {
			t.Errorf("namespaces %v: the hub's reach is missing", namespaces)
		}
	})
}

package retrieval_test

import (
	"context"
	"errors"
	"slices"
	"strings"
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
	t.Parallel()
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

// other is a second list that gives every hit a snippet of its own: the
// full-text hits backwards, then a record full text does not find.
type other struct {
	db    *storage.DB
	extra *storage.Record
}

func (other) Name() string { return "other" }

func (o other) Rank(ctx context.Context, q retrieval.Query) (retrieval.Ranked, error) {
	res, err := retrieval.FTS{DB: o.db}.Rank(ctx, q)
	slices.Reverse(res.Hits)
	res.Hits = append(res.Hits, storage.Hit{Record: o.extra})
	for i := range res.Hits {
		res.Hits[i].Snippet = "from the other list"
	}
	return res, err
}

// TestPipeline_Snippets: the first Query.Snippets hits that full text found
// carry the snippet storage.Search cuts for them, whatever list came first
// in the fusion; a hit only another list found keeps that list's; no other
// full-text hit is cut.
func TestPipeline_Snippets(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := storagetest.Open(t)
	filler := "nothing to see in these first words of a long note about other matters entirely, "
	for _, s := range []string{"retry webhooks with backoff", "webhooks deliver events", "backoff for failed deliveries", "a retry of the webhooks"} {
		storagetest.Store(t, db, storage.NewRecord{Title: storagetest.Text(t, s), Content: storagetest.Text(t, filler+filler+s+". "+filler)})
	}
	extra := storagetest.Store(t, db, storage.NewRecord{Title: storagetest.Text(t, "unrelated cache note"), Content: storagetest.Text(t, "caches")})
	q := retrieval.Query{Text: "retry webhooks backoff", Chain: []string{"global"}, Depth: 20}
	hits, err := db.Search(ctx, storage.SearchQuery{Text: q.Text, Namespaces: q.Chain, Limit: q.Depth})
	if err != nil || len(hits) != 4 {
		t.Fatalf("search: %d hits, %v; want 4", len(hits), err)
	}
	want := map[string]string{}
	for _, h := range hits {
		if !strings.Contains(h.Snippet, "…") {
			t.Fatalf("snippet %q is not cut from the middle", h.Snippet)
		}
		want[h.Record.ID] = h.Snippet
	}

	for _, tt := range []struct {
		name  string
		lists []retrieval.List
		n     int
	}{
		{"OKFullTextAlone", nil, 2},
		{"OKFused", []retrieval.List{other{db: db, extra: extra}}, 5},
		{"OKNone", []retrieval.List{other{db: db, extra: extra}}, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			q := q
			q.Snippets = tt.n
			res, err := retrieval.New(db, tt.lists...).Run(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			for i, h := range res.Hits {
				var w string
				switch {
				case h.Record.ID == extra.ID || len(tt.lists) > 0 && i >= tt.n:
					w = "from the other list"
				case i < tt.n:
					w = want[h.Record.ID]
				}
				if h.Snippet != w {
					t.Errorf("hit %d (%s): snippet %q, want %q", i, h.Record.Title, h.Snippet, w)
				}
			}
		})
	}
}

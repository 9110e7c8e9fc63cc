package storage_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/storagetest"
)

func hitIDs(hits []storage.Hit) []string {
	var ids []string
	for _, h := range hits {
		ids = append(ids, h.Record.ID)
	}
	return ids
}

func search(tb testing.TB, db *storage.DB, q storage.SearchQuery) []string {
	tb.Helper()
	hits, err := db.Search(ctx, q)
	if err != nil {
		tb.Fatalf("Search(%+v): %v", q, err)
	}
	return hitIDs(hits)
}

func TestDB_Search(t *testing.T) {
	t.Run("OKNaturalLanguage", func(t *testing.T) {
		db := storagetest.Open(t)
		pg := storagetest.Store(t, db, rec(t, "global", "Billing database",
			"The billing service stores invoices in PostgreSQL 16."))
		mig := storagetest.Store(t, db, rec(t, "global", "Schema migrations",
			"Migrations are numbered SQL files applied at start."))
		storagetest.Store(t, db, rec(t, "global", "Lunch", "Pizza on Fridays."))

		// Shares only some words with the record (billing, database); the
		// rest (which, does, use, for) is missing or stopwords.
		if got := search(t, db, storage.SearchQuery{Text: "Which database does billing use for invoices?"}); !slices.Equal(got, []string{pg.ID}) {
			t.Errorf("got %v, want [%s]", got, pg.ID)
		}
		// Porter stemming: "migration" and "applying" meet "Migrations" and "applied".
		if got := search(t, db, storage.SearchQuery{Text: "how is a migration applied?"}); !slices.Equal(got, []string{mig.ID}) {
			t.Errorf("got %v, want [%s]", got, mig.ID)
		}
		hits, err := db.Search(ctx, storage.SearchQuery{Text: "invoices"})
		if err != nil {
			t.Fatal(err)
		}
		if len(hits) != 1 || !strings.Contains(hits[0].Snippet, "invoices") || hits[0].BM25 >= 0 {
			t.Errorf("hit: got %+v, want a snippet with the word and a negative bm25", hits)
		}
	})

	t.Run("OKTitleOutranksContent", func(t *testing.T) {
		db := storagetest.Open(t)
		inContent := storagetest.Store(t, db, rec(t, "global", "Deploys", "We deploy with Kubernetes on the cluster."))
		inTitle := storagetest.Store(t, db, rec(t, "global", "Kubernetes", "We deploy with it on the cluster."))
		if got, want := search(t, db, storage.SearchQuery{Text: "kubernetes"}), []string{inTitle.ID, inContent.ID}; !slices.Equal(got, want) {
			t.Errorf("got %v, want %v (title first)", got, want)
		}
	})

	t.Run("OKSyntaxIsText", func(t *testing.T) {
		db := storagetest.Open(t)
		r := storagetest.Store(t, db, rec(t, "global", "Near the column", "title content OR AND NOT near star"))
		for _, q := range []string{
			`"`, `"unbalanced`, `*`, `star*`, `NEAR(`, `NEAR(near column, 2)`, `OR`, `AND`, `NOT`,
			`near OR`, `-column`, `title:near`, `content : near`, `^near`, `(near`, `near)`, `((`, `{title}: x`,
			`a + b`, `'`, `\`, `near AND`, "\x00", "\u00ad", "🔥🔥", `"" OR ""`, `col:"x"`, strings.Repeat("near ", 500),
		} {
			if _, err := db.Search(ctx, storage.SearchQuery{Text: q}); err != nil {
				t.Errorf("Search(%q): %v", q, err)
			}
		}
		if got := search(t, db, storage.SearchQuery{Text: `NEAR(column`}); !slices.Equal(got, []string{r.ID}) {
			t.Errorf("got %v, want the record (words matched as text)", got)
		}
	})

	t.Run("OKOnlyStopwords", func(t *testing.T) {
		db := storagetest.Open(t)
		storagetest.Store(t, db, rec(t, "global", "What we do", "How is it done"))
		if got := search(t, db, storage.SearchQuery{Text: "how do we ... what is it?"}); len(got) != 0 {
			t.Errorf("got %v, want no hits", got)
		}
	})

	t.Run("OKFilters", func(t *testing.T) {
		db := storagetest.Open(t)
		// A ULID's first 8 characters are its time to about a second: space
		// the records so that their 8-character prefixes differ.
		db.Now, _ = steppingClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), time.Hour)
		a := storagetest.Store(t, db, rec(t, "github/acme/api", "Retry policy", "retry three times"))
		bnr := rec(t, "github/acme/web", "Retry policy", "retry twice")
		bnr.Type = storage.TypeNote
		b := storagetest.Store(t, db, bnr)
		g := storagetest.Store(t, db, rec(t, "global", "Retry policy", "retry once"))

		got := search(t, db, storage.SearchQuery{Text: "retry", Namespaces: []string{"github/acme/api", "global"}})
		slices.Sort(got)
		if want := []string{a.ID, g.ID}; !slices.Equal(got, want) {
			t.Errorf("namespaces: got %v, want %v", got, want)
		}
		if got := search(t, db, storage.SearchQuery{Text: "retry", Types: []string{storage.TypeNote}}); !slices.Equal(got, []string{b.ID}) {
			t.Errorf("types: got %v, want [%s]", got, b.ID)
		}
		got = search(t, db, storage.SearchQuery{Text: "retry", Exclude: []string{
			a.ID[:8],                   // excludes a
			strings.ToLower(b.ID[:10]), // excludes b, whatever the case
			g.ID[:7],                   // too short: ignored
		}})
		if !slices.Equal(got, []string{g.ID}) {
			t.Errorf("exclude: got %v, want [%s]", got, g.ID)
		}
		if got := search(t, db, storage.SearchQuery{Text: "retry", Limit: 2}); len(got) != 2 {
			t.Errorf("limit: got %d hits, want 2", len(got))
		}
	})

	t.Run("OKLiveOnly", func(t *testing.T) {
		db := storagetest.Open(t)
		old := storagetest.Store(t, db, rec(t, "global", "Cache layer old", "redis"))
		nr := rec(t, "global", "Cache layer new", "redis")
		nr.Supersedes = old.ID
		repl := storagetest.Store(t, db, nr)
		gone := storagetest.Store(t, db, rec(t, "global", "Cache layer gone", "redis"))
		if _, err := db.Forget(ctx, gone.ID, 0, text(t, "obsolete"), "test"); err != nil {
			t.Fatal(err)
		}
		cnr := rec(t, "global", "Cache layer candidate", "redis")
		cnr.Status = storage.StatusCandidate
		cand := storagetest.Store(t, db, cnr)

		got := search(t, db, storage.SearchQuery{Text: "redis cache"})
		slices.Sort(got)
		want := []string{repl.ID, cand.ID}
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("got %v, want %v (active and candidate only)", got, want)
		}
	})

	t.Run("OKStatusDoesNotReindex", func(t *testing.T) {
		db := storagetest.Open(t)
		r := storagetest.Store(t, db, rec(t, "global", "Logging", "structured logs with slog"))
		before := ftsDigest(t, db)

		r, err := db.Update(ctx, r.ID, 1, storage.Changes{Status: ptr(storage.StatusCandidate), Confidence: ptr(0.5), Topics: ptr(storagetest.Texts(t, "obs"))}, "test")
		if err != nil {
			t.Fatal(err)
		}
		if err := db.CountReturned(ctx, []string{r.ID}); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Update(ctx, r.ID, 2, storage.Changes{Title: textp(t, "Logging")}, "test"); err != nil { // same title
			t.Fatal(err)
		}
		if got := ftsDigest(t, db); got != before {
			t.Errorf("status, confidence, topics and usage changes rewrote the FTS index")
		}
		if got := search(t, db, storage.SearchQuery{Text: "slog"}); !slices.Equal(got, []string{r.ID}) {
			t.Errorf("got %v, want [%s]", got, r.ID)
		}

		// A content change does reindex: the old word is gone, the new one found.
		if _, err := db.Update(ctx, r.ID, 2, storage.Changes{Content: textp(t, "structured logs with zerolog")}, "test"); err != nil {
			t.Fatal(err)
		}
		if got := ftsDigest(t, db); got == before {
			t.Errorf("a content change left the FTS index as it was")
		}
		if got := search(t, db, storage.SearchQuery{Text: "slog"}); len(got) != 0 {
			t.Errorf("old word: got %v, want no hits", got)
		}
		if got := search(t, db, storage.SearchQuery{Text: "zerolog"}); !slices.Equal(got, []string{r.ID}) {
			t.Errorf("new word: got %v, want [%s]", got, r.ID)
		}
	})

	t.Run("ErrType", func(t *testing.T) {
		db := storagetest.Open(t)
		_, err := db.Search(ctx, storage.SearchQuery{Text: "x", Types: []string{storage.TypeNote, "gossip"}})
		wantErr(t, err, storage.Invalid, "types[1]")
	})
}

func TestFTSQuery(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"How do we deploy the API?", `"deploy" OR "api"`},
		{`NEAR(a b) OR "c*" -x title:e ^f`, `"near" OR "b" OR "c" OR "x" OR "title" OR "e" OR "f"`},
		{"Déjà vu, déjà", `"déjà" OR "vu"`},
		{"what is it", ""},
		{"", ""},
		{"v1.2 go1.26", `"v1" OR "2" OR "go1" OR "26"`},
	} {
		if got := storage.FTSQuery(tt.in); got != tt.want {
			t.Errorf("FTSQuery(%q): got %s, want %s", tt.in, got, tt.want)
		}
	}
}

// FuzzSearch holds that no query text makes FTS5 fail.
func FuzzSearch(f *testing.F) {
	for _, s := range []string{`"`, `NEAR(`, `a OR b`, `x:y`, `^*-`, `(((`, "\u0301e", "ǅ", "a\u200db"} {
		f.Add(s)
	}
	db := storagetest.Open(f)
	storagetest.Store(f, db, rec(f, "global", "fuzz target", "near or and not title content"))
	f.Fuzz(func(t *testing.T, q string) {
		if _, err := db.Search(ctx, storage.SearchQuery{Text: q}); err != nil {
			t.Errorf("Search(%q): %v", q, err)
		}
	})
}

func TestDB_Timeline(t *testing.T) {
	db := storagetest.Open(t)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := t0
	db.Now = func() time.Time { return now }
	var ids []string
	for i, ns := range []string{"global", "projects/x", "global", "global"} {
		now = t0.Add(time.Duration(i) * time.Hour)
		ids = append(ids, storagetest.Store(t, db, rec(t, ns, "t", "c")).ID)
	}
	if _, err := db.Forget(ctx, ids[3], 0, text(t, "x"), "test"); err != nil {
		t.Fatal(err)
	}
	ids = ids[:3]

	timeline := func(q storage.TimelineQuery) []string {
		t.Helper()
		recs, err := db.Timeline(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range recs {
			got = append(got, r.ID)
		}
		return got
	}
	if got, want := timeline(storage.TimelineQuery{}), []string{ids[2], ids[1], ids[0]}; !slices.Equal(got, want) {
		t.Errorf("all: got %v, want %v (newest first, deleted left out)", got, want)
	}
	if got, want := timeline(storage.TimelineQuery{Namespaces: []string{"global"}}), []string{ids[2], ids[0]}; !slices.Equal(got, want) {
		t.Errorf("namespace: got %v, want %v", got, want)
	}
	if got, want := timeline(storage.TimelineQuery{Since: t0.Add(time.Hour), Until: t0.Add(2 * time.Hour)}), []string{ids[1]}; !slices.Equal(got, want) {
		t.Errorf("since/until: got %v, want %v (since inclusive, until exclusive)", got, want)
	}
	if got, want := timeline(storage.TimelineQuery{Limit: 1}), []string{ids[2]}; !slices.Equal(got, want) {
		t.Errorf("limit: got %v, want %v", got, want)
	}
}

// TestDB_SearchCJK: a word inside a Chinese, Japanese or Korean sentence
// (no spaces between words) is found, alone or in a mixed-script query; a
// single character finds its records; text of other scripts is unaffected.
func TestDB_SearchCJK(t *testing.T) {
	db := storagetest.Open(t)
	store := func(title, content string) *storage.Record {
		return storagetest.Store(t, db, storage.NewRecord{Title: storagetest.Text(t, title), Content: storagetest.Text(t, content)})
	}
	zh := store("数据库迁移", "我们使用数据库迁移工具来管理表结构的变更，部署前先运行迁移。")
	ja := store("デプロイ手順", "本番環境へのデプロイは毎週火曜日に行います。ロールバック手順も確認すること。")
	ko := store("캐시 정책", "캐시는 쓰기 시점에 무효화합니다. 재시도는 지수 백오프를 사용합니다.")
	en := store("Cache policy", "Invalidate the cache on write; retries use exponential backoff.")
	for _, tt := range []struct {
		query string
		want  []string
	}{
		{"表结构", []string{zh.ID}},                 // a word inside a sentence
		{"如何运行迁移", []string{zh.ID}},              // a question sharing a word
		{"火曜日", []string{ja.ID}},                 // Japanese
		{"ロールバック", []string{ja.ID}},              // Katakana
		{"무효화", []string{ko.ID}},                 // Korean
		{"docker 部署", []string{zh.ID}},           // mixed script: the CJK word counts
		{"cache 캐시", []string{ko.ID, en.ID}},     // both indexes answer
		{"迁", []string{zh.ID}},                   // one character
		{"exponential backoff", []string{en.ID}}, // other text as before
	} {
		hits, err := db.Search(ctx, storage.SearchQuery{Text: tt.query, Limit: 10})
		if err != nil {
			t.Fatalf("%q: %v", tt.query, err)
		}
		var got []string
		for _, h := range hits {
			got = append(got, h.Record.ID)
		}
		slices.Sort(got)
		want := slices.Clone(tt.want)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%q: got %v, want %v", tt.query, got, want)
		}
	}
	// Snippets of CJK hits come from the CJK index, around the match.
	hits, _ := db.Search(ctx, storage.SearchQuery{Text: "表结构", Limit: 1})
	if len(hits) != 1 || !strings.Contains(hits[0].Snippet, "表结构") {
		t.Errorf("snippet %q does not show the match", hits[0].Snippet)
	}
}

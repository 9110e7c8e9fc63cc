package storage_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/storagetest"
)

// TestCoverage_CJK: a CJK query's coverage weighs its bigrams, the terms
// the CJK list looks up: a record holding the query's words inside a
// sentence written without spaces covers it, on both backends, so the
// relevance bar does not abstain on every CJK search; a record of other
// text covers none of it.
func TestCoverage_CJK(t *testing.T) {
	t.Parallel()
	db := storagetest.Open(t)
	store := func(title, content string) *storage.Record {
		return storagetest.Store(t, db, rec(t, "global", title, content))
	}
	zh := store("数据库迁移", "我们使用数据库迁移工具来管理表结构的变更，部署前先运行迁移。")
	ja := store("デプロイ手順", "本番環境へのデプロイは毎週火曜日に行います。")
	ko := store("캐시 정책", "캐시는 쓰기 시점에 무효화합니다.")
	en := store("Cache policy", "Invalidate the cache on write; retries use exponential backoff.")
	for i := range storage.MinCoverageRecords {
		store(fmt.Sprintf("Lunch rota week %d", i), "Order from the usual place.")
	}
	// Word weights are the last ranked search's (QueryCoverage).
	if _, err := db.Search(ctx, storage.SearchQuery{Text: "usual place", Limit: 5}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		query string
		rec   *storage.Record
		held  []string
		whole bool // the record holds the whole query: coverage 1
	}{
		{"表结构", zh, []string{"表结", "结构"}, true},           // a word inside a sentence
		{"如何运行迁移", zh, []string{"运行", "行迁", "迁移"}, false}, // a question sharing a word
		{"火曜日", ja, []string{"火曜", "曜日"}, true},
		{"무효화", ko, []string{"무효", "효화"}, true},
		{"迁", zh, []string{"迁"}, true},           // one character
		{"docker 部署", zh, []string{"部署"}, false}, // mixed script: the word counts too
	} {
		hits, err := db.Search(ctx, storage.SearchQuery{Text: c.query, Limit: 5})
		if err != nil || len(hits) == 0 || hits[0].Record.ID != c.rec.ID {
			t.Fatalf("%q: search %d hits, %v; want %s first", c.query, len(hits), err, c.rec.Title)
		}
		cov, err := db.QueryCoverage(ctx, c.query)
		if err != nil {
			t.Fatal(err)
		}
		if !cov.Telling() {
			t.Errorf("%q: coverage not telling in a store of %d records", c.query, storage.MinCoverageRecords+4)
		}
		got, held := cov.Of(c.rec)
		if !slices.Equal(held, c.held) {
			t.Errorf("%q: %s holds %q, want %q", c.query, c.rec.Title, held, c.held)
		}
		switch {
		case c.whole && got != 1:
			t.Errorf("%q: %s covers %.3f, want 1", c.query, c.rec.Title, got)
		case !c.whole && (got < 0.3 || got >= 1):
			t.Errorf("%q: %s covers %.3f, want most but not all of the query", c.query, c.rec.Title, got)
		}
		if got, held := cov.Of(en); got != 0 || held != nil {
			t.Errorf("%q: %s covers %.3f (%q), want 0", c.query, en.Title, got, held)
		}
	}
}

// TestCoverage_CJKBeforeAnyWordSearch: a CJK prompt's coverage weighs its
// terms over the store's records even when no word search has run since
// the store opened (a CJK-only search ranks no word, so it counts no
// rows): otherwise the first CJK prompts of a process never abstain.
func TestCoverage_CJKBeforeAnyWordSearch(t *testing.T) {
	t.Parallel()
	db := storagetest.Open(t)
	zh := storagetest.Store(t, db, rec(t, "global", "数据库迁移", "我们使用数据库迁移工具来管理表结构的变更。"))
	for i := range storage.MinCoverageRecords {
		storagetest.Store(t, db, rec(t, "global", fmt.Sprintf("Lunch rota week %d", i), "Order from the usual place."))
	}
	if hits, err := db.Search(ctx, storage.SearchQuery{Text: "表结构", Limit: 5}); err != nil || len(hits) == 0 || hits[0].Record.ID != zh.ID {
		t.Fatalf("search: %d hits, %v; want %s first", len(hits), err, zh.Title)
	}
	cov, err := db.QueryCoverage(ctx, "表结构")
	if err != nil {
		t.Fatal(err)
	}
	if !cov.Telling() {
		t.Errorf("coverage not telling in a store of %d records before any word search", storage.MinCoverageRecords+1)
	}
	if got, _ := cov.Of(zh); got != 1 {
		t.Errorf("%s covers %.3f, want 1", zh.Title, got)
	}
}

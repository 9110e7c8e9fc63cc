package server

import (
	"context"
	"testing"

	"github.com/hearth-memory/hearth/gateway"
	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
	"github.com/hearth-memory/hearth/server/options"
	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/storagetest"
)

// TestSearch_AbstainCJK: the relevance bar weighs a CJK prompt by its
// bigrams (docs/abstention.md, "CJK"): a prompt whose words a record holds
// inside a sentence written without spaces gets that record with abstain;
// one sharing a single word with it gets nothing with abstain, though
// without it that word finds the record. On the test's backend and on
// PostgreSQL (docs/postgres.md; skipped without it unless
// HEARTH_REQUIRE_POSTGRES).
func TestSearch_AbstainCJK(t *testing.T) {
	t.Parallel()
	t.Run("Store", func(t *testing.T) {
		t.Parallel()
		abstainCJK(t, abstainStore(t))
	})
	t.Run("Postgres", func(t *testing.T) {
		t.Parallel()
		abstainCJK(t, fillAbstainStore(t, storagetest.OpenURL(t, storagetest.URL(t))))
	})
}

func abstainCJK(t *testing.T, db *storage.DB) {
	ctx := context.Background()
	zh := storagetest.Store(t, db, storage.NewRecord{Namespace: abstainNS, Type: storage.TypeDecision,
		Title: storagetest.Text(t, "数据库迁移"), Content: storagetest.Text(t, "我们使用数据库迁移工具来管理表结构的变更，部署前先运行迁移。"),
		Status: storage.StatusActive})
	srv, err := New(db, Config{Marshal: gateway.MarshalResult, Options: options.Default()})
	if err != nil {
		t.Fatal(err)
	}
	search := func(query string, abstain bool) []*hearthv1.SearchHit {
		t.Helper()
		got, err := (&memoryService{Server: srv}).Search(ctx, &hearthv1.SearchRequest{Query: query, Namespace: abstainNS, Limit: 3, Abstain: abstain})
		if err != nil {
			t.Fatal(err)
		}
		return got.GetHits()
	}
	// Word weights are the last ranked word search's (storage.QueryCoverage).
	search("how many times do we retry outbound calls", true)
	for _, q := range []string{"表结构", "部署前如何运行迁移", "数据库 部署"} {
		if hits := search(q, true); len(hits) == 0 || hits[0].GetId() != zh.ID {
			t.Errorf("%q: %d hits with abstain, want %s first", q, len(hits), zh.Title)
		}
	}
	const one = "迁移到云端的费用" // shares 迁移 alone
	if hits := search(one, false); len(hits) == 0 {
		t.Fatalf("%q: no hit without abstain: the case tests nothing", one)
	}
	if hits := search(one, true); len(hits) != 0 {
		t.Errorf("%q: %d hits with abstain (first %q, %s), want none", one, len(hits), hits[0].GetTitle(), hits[0].GetWhy())
	}
}

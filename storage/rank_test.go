package storage

import (
	"context"
	"encoding/hex"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hearth-memory/hearth/storage/fulltext"
	"github.com/hearth-memory/hearth/storage/internal/fts"
	"github.com/hearth-memory/hearth/storage/screen"
)

// rankCorpus stores n records of Zipf-distributed words in two namespaces.
func rankCorpus(t *testing.T, db *DB, n int, seed uint64) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, seed+1))
	vocab := strings.Fields(`retry webhook backoff delivery failed cache invalidate write database
		migration schema index query token budget session anchor namespace billing invoice deploy
		release version branch worker queue lease job timeout error log metric api client server`)
	for i := range 200 {
		vocab = append(vocab, fmt.Sprintf("term%03d", i))
	}
	words := zipfWords(r, vocab)
	for i := range n {
		ns := "global"
		if i%3 == 0 {
			ns = "github/acme/api"
		}
		title, _ := screen.Check("title", words(2+r.IntN(6)))
		content, _ := screen.Check("content", words(5+r.IntN(80)))
		if _, err := db.Store(context.Background(), NewRecord{Namespace: ns, Type: TypeNote, Title: title, Content: content,
			Confidence: 0.8, Writer: "t", Source: SourceStore, Status: StatusActive}); err != nil {
			t.Fatal(err)
		}
	}
}

// zipfWords returns a maker of texts of k words drawn from vocab with
// Zipf-distributed frequencies, so that some words are in most records.
func zipfWords(r *rand.Rand, vocab []string) func(k int) string {
	z := rand.NewZipf(r, 1.2, 3, uint64(len(vocab)-1))
	return func(k int) string {
		w := make([]string, k)
		for i := range w {
			w[i] = vocab[z.Uint64()]
		}
		return strings.Join(w, " ")
	}
}

// compareRanks runs query match with bm25 and hearth_rank side by side and
// fails when any row's scores differ by more than 1e-9.
func compareRanks(t *testing.T, db *DB, match string, nScope int) (rows int) {
	t.Helper()
	err := db.read(context.Background(), "compare", func(tx *txn) error {
		rs, err := tx.QueryContext(context.Background(), `
			SELECT records_fts.rowid, bm25(records_fts, 3.0, 1.0, 0.0), hearth_rank(records_fts, ?2, ds.sz, '', 3.0, 1.0, 0.0)
			FROM records_fts JOIN records_fts_docsize AS ds ON ds.id = records_fts.rowid
			WHERE records_fts MATCH ?1`, match, nScope)
		if err != nil {
			return err
		}
		defer rs.Close()
		for rs.Next() {
			var id int64
			var want, got float64
			if err := rs.Scan(&id, &want, &got); err != nil {
				return err
			}
			rows++
			if math.Abs(want-got) > 1e-9 {
				t.Errorf("%s: row %d: hearth_rank %.12f, bm25 %.12f", match, id, got, want)
			}
		}
		return rs.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// TestRank_MatchesBM25: with its document frequencies fresh, hearth_rank
// scores every row of every query exactly as FTS5's bm25 with the same
// weights, scope phrases or not; after writes (new rows, an edit, a
// delete) the cache is counted again and still agrees.
func TestRank_MatchesBM25(t *testing.T) {
	db, err := Open(context.Background(), filepath.Join(t.TempDir(), "hearth.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rankCorpus(t, db, 400, 1)
	scope := `fts_scope : ("` + scopeToken("global") + `" OR "` + scopeToken("github/acme/api") + `") AND `
	queries := []string{
		`"retry" OR "webhook" OR "backoff"`,
		`"term150" OR "cache"`,
		`"database" OR "migration" OR "schema" OR "term007" OR "absentword"`,
		`"retries"`, // stemmed
	}
	check := func(t *testing.T) {
		t.Helper()
		total := 0
		for _, q := range queries {
			total += compareRanks(t, db, "{title content} : ("+q+")", 0)
			total += compareRanks(t, db, scope+"{title content} : ("+q+")", 2)
		}
		if total < 300 {
			t.Fatalf("compared %d rows; the corpus matches too little", total)
		}
	}
	t.Run("OKFresh", check)

	t.Run("OKCached", func(t *testing.T) {
		counted := db.fts.Counted()
		check(t)
		if got := db.fts.Counted(); got != counted {
			t.Errorf("%d frequencies counted again without a write in between", got-counted)
		}
	})

	t.Run("OKBesideBookkeeping", func(t *testing.T) {
		// What runs beside searches — recorded asks, counted uses, the job
		// queue, audit rows — writes no record: the frequencies stay.
		ctx := context.Background()
		before, counted := db.eng.Gen(), db.fts.Counted()
		q, _ := screen.Check("query", "retry webhook")
		db.RecordAsk(Ask{Namespace: "global", Client: "t", Session: "s1", Query: q, Hits: []string{"01ARZ3NDEKTSV4RRFFQ69G5FAV"}})
		if err := db.FlushAsks(ctx); err != nil {
			t.Fatal(err)
		}
		db.NoteReturned([]string{"01ARZ3NDEKTSV4RRFFQ69G5FAV"})
		if err := db.FlushUsage(ctx); err != nil {
			t.Fatal(err)
		}
		if _, _, err := db.EnqueueJob(ctx, NewJob{Kind: "t"}); err != nil {
			t.Fatal(err)
		}
		if err := db.Audit(ctx, AuditEntry{Client: "t", Action: ActionRefuseAuth}); err != nil {
			t.Fatal(err)
		}
		if got := db.eng.Gen(); got != before {
			t.Errorf("bookkeeping advanced the write generation by %d", got-before)
		}
		check(t)
		if got := db.fts.Counted(); got != counted {
			t.Errorf("%d frequencies counted again after bookkeeping alone", got-counted)
		}
	})

	t.Run("OKAfterWrites", func(t *testing.T) {
		before := db.eng.Gen()
		rankCorpus(t, db, 50, 2)
		recs, err := db.Timeline(context.Background(), TimelineQuery{Limit: 2})
		if err != nil {
			t.Fatal(err)
		}
		content, _ := screen.Check("content", "retry retry retry webhook term150 cache")
		if _, err := db.Update(context.Background(), recs[0].ID, recs[0].Revision, Changes{Content: &content}, "t"); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Forget(context.Background(), recs[1].ID, recs[1].Revision, screen.Text{}, "t"); err != nil {
			t.Fatal(err)
		}
		if err := db.ExecRaw(context.Background(), `DELETE FROM records WHERE id = ?`, recs[1].ID); err != nil {
			t.Fatal(err)
		}
		if db.eng.Gen() == before {
			t.Fatal("writes did not advance the write generation")
		}
		counted := db.fts.Counted()
		check(t)
		if db.fts.Counted() == counted {
			t.Error("no frequency was counted again after the writes")
		}
	})
}

// TestSearch_Pruned: on a store large enough to prune, a query with a common
// word and a rarer one ranks the records holding the rarer word first, by
// both words, and returns what full ranking returns; a query of common words
// alone still finds its best records; a word never counted is never pruned.
func TestSearch_Pruned(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(t.TempDir(), "hearth.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	defer func(n int64) { fts.PruneMinRows = n }(fts.PruneMinRows)
	fts.PruneMinRows = 500
	var recs []NewRecord
	text := func(s string) screen.Text { x, _ := screen.Check("t", s); return x }
	for i := range 1200 {
		content := fmt.Sprintf("filler%d words about nothing much", i%97)
		switch {
		case i%2 == 0 && i%40 == 0:
			content = "deploy the release with the webhook retry " + content
		case i%2 == 0:
			content = "deploy the release " + content
		case i%40 == 1:
			content = "webhook retry " + content
		}
		recs = append(recs, NewRecord{Namespace: "global", Type: TypeNote, Title: text(fmt.Sprintf("record %d", i)), Content: text(content),
			Confidence: 0.8, Writer: "t", Source: SourceStore, Status: StatusActive})
	}
	if err := db.StoreMany(ctx, recs); err != nil {
		t.Fatal(err)
	}
	q := SearchQuery{Text: "deploy webhook", Namespaces: []string{"global"}, Limit: 10}
	// The first search counts the words and learns their stems; the second
	// prunes.
	full, err := db.Search(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if gate, n := db.gate(fulltext.QueryWords(q.Text)); n != 1 || gate != `"webhook"` {
		t.Fatalf("gate = %q (%d), want the rarer word", gate, n)
	}
	pruned, err := db.Search(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if len(pruned) != len(full) {
		t.Fatalf("pruned %d hits, full %d", len(pruned), len(full))
	}
	for i := range full {
		if pruned[i].Record.ID != full[i].Record.ID || math.Abs(pruned[i].BM25-full[i].BM25) > 1e-9 {
			t.Errorf("hit %d: pruned %s (%v), full %s (%v)", i, pruned[i].Record.ID, pruned[i].BM25, full[i].Record.ID, full[i].BM25)
		}
		if !strings.Contains(pruned[i].Record.Content, "webhook") {
			t.Errorf("hit %d lacks the rarer word: %q", i, pruned[i].Record.Content)
		}
	}
	common := SearchQuery{Text: "deploy release", Namespaces: []string{"global"}, Limit: 10}
	if _, err := db.Search(ctx, common); err != nil {
		t.Fatal(err)
	}
	if gate, n := db.gate(fulltext.QueryWords(common.Text)); n != 2 || gate != `"deploy" AND "release"` {
		t.Fatalf("gate = %q (%d), want every common word", gate, n)
	}
	// A word no record holds gates nothing: once counted, it is left out.
	absent := SearchQuery{Text: "deploy release zzabsentword", Namespaces: []string{"global"}, Limit: 10}
	if _, err := db.Search(ctx, absent); err != nil {
		t.Fatal(err)
	}
	if gate, n := db.gate(fulltext.QueryWords(absent.Text)); n != 2 || gate != `"deploy" AND "release"` {
		t.Fatalf("gate = %q (%d), want the common words without the absent one", gate, n)
	}
	hits, err := db.Search(ctx, common)
	if err != nil || len(hits) != 10 {
		t.Fatalf("common words: %d hits, %v", len(hits), err)
	}
	if _, n := db.gate([]string{"neverseen", "deploy"}); n != 1 {
		t.Errorf("a word never counted is pruned")
	}
}

// scopeToken is a namespace's single token in the full-text index, as the
// generated column records.fts_scope (migration 0006) computes it:
// 'ns' || hex(namespace) || '0'.
func scopeToken(ns string) string {
	return "ns" + strings.ToUpper(hex.EncodeToString([]byte(ns))) + "0"
}

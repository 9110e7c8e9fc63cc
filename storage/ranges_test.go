package storage

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hearth-memory/hearth/storage/fulltext"
	"github.com/hearth-memory/hearth/storage/internal/fts"
	"github.com/hearth-memory/hearth/storage/screen"
)

// rangesCorpus stores n records of Zipf-distributed words spread over
// namespaces, some of them in each namespace's title.
func rangesCorpus(t *testing.T, db *DB, n int, namespaces []string) {
	t.Helper()
	r := rand.New(rand.NewPCG(11, 12))
	vocab := strings.Fields(`retry webhook backoff delivery failed cache invalidate write database
		migration schema index query budget session anchor namespace billing invoice deploy`)
	for i := range 120 {
		vocab = append(vocab, fmt.Sprintf("term%03d", i))
	}
	words := zipfWords(r, vocab)
	for i := range n {
		title, _ := screen.Check("title", words(2+r.IntN(5)))
		content, _ := screen.Check("content", words(5+r.IntN(60)))
		if _, err := db.Store(context.Background(), NewRecord{Namespace: namespaces[r.IntN(len(namespaces))],
			Type: Types[i%len(Types)], Title: title, Content: content,
			Confidence: 0.8, Writer: "t", Source: SourceStore, Status: StatusActive}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSearch_NamespaceRanges: a search within namespaces reads each
// namespace's range of full-text rowids (migration 0075) and finds and
// ranks exactly what the scope-token query over the whole index (0006)
// does, with the same scores, for one namespace or several, filtered by
// type or not; and hearth_rank still equals bm25 inside a range.
func TestSearch_NamespaceRanges(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(t.TempDir(), "hearth.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	namespaces := []string{"global", "github/acme/api", "github/acme/web", "topics/home-assistant", "local/ürün"}
	rangesCorpus(t, db, 600, namespaces)
	// Twins rank alike: a limit falls inside a tie, which only the ids
	// settle. Some records are forgotten: still indexed, never found.
	var twins []string
	for range 40 {
		title, _ := screen.Check("title", "Retry the webhook")
		content, _ := screen.Check("content", "Retry webhook deliveries with backoff, cache the result.")
		rec, err := db.Store(ctx, NewRecord{Namespace: "github/acme/api", Type: TypeNote, Title: title, Content: content,
			Confidence: 0.8, Writer: "t", Source: SourceStore, Status: StatusActive})
		if err != nil {
			t.Fatal(err)
		}
		twins = append(twins, rec.ID)
	}
	// Imported twins of those, with earlier ids that fall as their seqs
	// rise: in the tie, the order of full-text rowids is not that of ids.
	var items []ImportItem
	for i := range 30 {
		title, _ := screen.Check("title", "Retry the webhook")
		content, _ := screen.Check("content", "Retry webhook deliveries with backoff, cache the result.")
		items = append(items, ImportItem{ID: fmt.Sprintf("01HZX00000000000000000%04d", 9999-i), Namespace: "github/acme/api",
			Type: TypeNote, Title: title, Content: content, Confidence: 0.8, Status: StatusActive, Writer: "t", Source: SourceImport})
	}
	res, err := db.Import(ctx, items, ImportOptions{Client: "t", AsActive: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	reason, _ := screen.Check("reason", "obsolete")
	for i, id := range twins {
		if i%4 == 1 {
			if _, err := db.Forget(ctx, id, 1, reason, "t"); err != nil {
				t.Fatal(err)
			}
		}
	}
	hits, err := db.Search(ctx, SearchQuery{Text: "term001 database", Limit: 200})
	if err != nil {
		t.Fatal(err)
	}
	for i, h := range hits {
		if i%3 == 0 {
			if _, err := db.Forget(ctx, h.Record.ID, h.Record.Revision, reason, "t"); err != nil {
				t.Fatal(err)
			}
		}
	}
	excluded := []string{twins[2][:10], twins[5][:8], hits[1].Record.ID[:12]}

	queries := []string{"retry webhook", "cache", "term050 database migration", "namespace budget deploy term003", "retries invoices", "absentword", "term001 database", "term110 term111"}
	scopes := [][]string{{"global"}, {"github/acme/api", "global"}, {"local/ürün"}, {"github/acme/web", "topics/home-assistant", "global"}, {"github/none"}}
	compared := 0
	for _, text := range queries {
		for _, scope := range scopes {
			for i, types := range [][]string{nil, {TypeDecision, TypeNote}, nil} {
				q := SearchQuery{Text: text, Namespaces: scope, Types: types, Limit: 15}
				var exclude []string
				if i == 2 {
					q.Exclude, exclude = excluded, excluded
				}
				hits, err := db.Search(ctx, q)
				if err != nil {
					t.Fatal(err)
				}
				x := fulltext.Expand(fulltext.QueryWords(text))
				keys := make([]string, len(scope))
				for i, ns := range scope {
					keys[i] = `"` + scopeToken(ns) + `"`
				}
				match := "fts_scope : (" + strings.Join(keys, " OR ") + ") AND {title content} : (" + fts.Quoted(x.Terms(), " OR ") + ")"
				var want []ranked
				if err := db.read(ctx, "test", func(tx *txn) (err error) {
					want, err = rankTx(ctx, tx, wordIndex, match, []any{len(scope), x.RankWords()}, nil, q, exclude, q.Limit)
					return err
				}); err != nil {
					t.Fatal(err)
				}
				got, exp := hitLines(hits), rankedLines(want)
				if !slices.Equal(got, exp) {
					t.Errorf("%q in %v, types %v:\ngot  %v\nwant %v", text, scope, types, got, exp)
				}
				compared += len(got)
			}
		}
	}
	if compared < 300 {
		t.Fatalf("compared %d hits; the corpus matches too little", compared)
	}

	// Beyond namespaces — every namespace, or a hub's reach — the lean
	// ranking reads no range and still finds what the full query does.
	for _, text := range queries {
		for _, q := range []SearchQuery{
			{Text: text, Limit: 15},
			{Text: text, Limit: 15, Exclude: excluded},
			{Text: text, Limit: 15, Namespaces: []string{"topics/home-assistant"}, AllRepositories: true},
			{Text: text, Limit: 40, Namespaces: []string{"global"}, AllRepositories: true},
		} {
			hits, err := db.Search(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			x := fulltext.Expand(fulltext.QueryWords(text))
			var want []ranked
			if err := db.read(ctx, "test", func(tx *txn) (err error) {
				want, err = rankTx(ctx, tx, wordIndex, "{title content} : ("+fts.Quoted(x.Terms(), " OR ")+")", []any{0, x.RankWords()}, nil, q, q.Exclude, q.Limit)
				return err
			}); err != nil {
				t.Fatal(err)
			}
			got, exp := hitLines(hits), rankedLines(want)
			if !slices.Equal(got, exp) {
				t.Errorf("%q, %+v:\ngot  %v\nwant %v", text, q, got, exp)
			}
		}
	}

	// Inside a namespace's range, hearth_rank is still FTS5's bm25.
	var key int64
	if err := db.lite.Reader().QueryRowContext(ctx, `SELECT key FROM namespace_keys WHERE namespace = 'github/acme/api'`).Scan(&key); err != nil {
		t.Fatal(err)
	}
	rs, err := db.lite.Reader().QueryContext(ctx, `
		SELECT bm25(records_fts, 3.0, 1.0, 0.0), hearth_rank(records_fts, 0, ds.sz, '', 3.0, 1.0, 0.0)
		FROM records_fts JOIN records_fts_docsize AS ds ON ds.id = records_fts.rowid
		WHERE records_fts MATCH '{title content} : ("retry" OR "cache" OR "term010")' AND records_fts.rowid BETWEEN ? AND ?`,
		key<<fts.SeqBits, key<<fts.SeqBits|fts.SeqMask)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	rows := 0
	for rs.Next() {
		var want, got float64
		if err := rs.Scan(&want, &got); err != nil {
			t.Fatal(err)
		}
		if rows++; math.Abs(want-got) > 1e-9 {
			t.Errorf("in the range: hearth_rank %.12f, bm25 %.12f", got, want)
		}
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
	if rows < 20 {
		t.Errorf("compared %d rows in the range", rows)
	}
}

// TestSearch_RenameMovesTheRange: a record moved to another namespace is
// indexed in that namespace's range, found there and no longer in the old
// one, and the index agrees with the records.
func TestSearch_RenameMovesTheRange(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(t.TempDir(), "hearth.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	title, _ := screen.Check("title", "Webhook retries")
	content, _ := screen.Check("content", "Retry webhook deliveries with backoff.")
	if _, err := db.Store(ctx, NewRecord{Namespace: "github/olduser/api", Type: TypeDecision, Title: title, Content: content,
		Confidence: 0.8, Writer: "t", Source: SourceStore, Status: StatusActive}); err != nil {
		t.Fatal(err)
	}
	find := func(ns string) int {
		hits, err := db.Search(ctx, SearchQuery{Text: "webhook retry", Namespaces: []string{ns}})
		if err != nil {
			t.Fatal(err)
		}
		return len(hits)
	}
	if find("github/olduser/api") != 1 {
		t.Fatal("not found in its own namespace")
	}
	if _, err := db.RenameNamespaces(ctx, []Rename{{From: "github/olduser", To: "github/newuser"}}); err != nil {
		t.Fatal(err)
	}
	if n := find("github/newuser/api"); n != 1 {
		t.Errorf("%d hits in the new namespace, want 1", n)
	}
	if n := find("github/olduser/api"); n != 0 {
		t.Errorf("%d hits in the old namespace, want 0", n)
	}
	var keys int
	if err := db.lite.Reader().QueryRowContext(ctx, `SELECT count(*) FROM namespace_keys`).Scan(&keys); err != nil || keys != 2 {
		t.Errorf("%d namespace keys (%v), want 2: the old one kept, the new one added", keys, err)
	}
	chk, err := db.CheckIntegrity(ctx)
	if err != nil || chk.Damage != nil || chk.Repaired != "" {
		t.Errorf("integrity: %+v, %v", chk, err)
	}
}

// TestMigration0075: a store indexed the 0006 way (rowid = seq, scope
// tokens) is re-indexed by namespace range when it opens (0075, then 0082's
// triggers over it), and searches find and rank what they did, before and
// after a store through the new triggers.
func TestMigration0075(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "hearth.db")
	db, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	namespaces := []string{"global", "github/acme/api", "github/acme/web"}
	rangesCorpus(t, db, 300, namespaces)
	search := func(db *DB) []string {
		var out []string
		for _, text := range []string{"retry webhook", "cache term010", "database migration schema"} {
			for _, scope := range [][]string{nil, {"github/acme/api", "global"}, {"github/acme/web"}} {
				hits, err := db.Search(ctx, SearchQuery{Text: text, Namespaces: scope, Limit: 20})
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, hitLines(hits)...)
			}
		}
		return out
	}
	want := search(db)
	// Back to the index of migrations 0006 and 0007.
	for _, q := range []string{
		`DROP TRIGGER records_fts_insert`, `DROP TRIGGER records_fts_delete`, `DROP TRIGGER records_fts_update`,
		`DROP TABLE records_vocab`, `DROP TABLE records_fts`, `DROP VIEW records_fts_source`, `DROP TABLE namespace_keys`,
		`CREATE VIRTUAL TABLE records_fts USING fts5 (title, content, fts_scope,
			content = 'records', content_rowid = 'seq', tokenize = 'porter unicode61')`,
		`INSERT INTO records_fts (records_fts) VALUES ('rebuild')`,
		`CREATE VIRTUAL TABLE records_vocab USING fts5vocab(records_fts, row)`,
		`CREATE TRIGGER records_fts_insert AFTER INSERT ON records BEGIN
			INSERT INTO records_fts (rowid, title, content, fts_scope) VALUES (new.seq, new.title, new.content, new.fts_scope);
		END`,
		`CREATE TRIGGER records_fts_delete AFTER DELETE ON records BEGIN
			INSERT INTO records_fts (records_fts, rowid, title, content, fts_scope)
				VALUES ('delete', old.seq, old.title, old.content, old.fts_scope);
		END`,
		`CREATE TRIGGER records_fts_update AFTER UPDATE OF title, content, namespace ON records
		WHEN old.title IS NOT new.title OR old.content IS NOT new.content OR old.namespace IS NOT new.namespace
		BEGIN
			INSERT INTO records_fts (records_fts, rowid, title, content, fts_scope)
				VALUES ('delete', old.seq, old.title, old.content, old.fts_scope);
			INSERT INTO records_fts (rowid, title, content, fts_scope) VALUES (new.seq, new.title, new.content, new.fts_scope);
		END`,
		`DELETE FROM migrations WHERE name = '0075_fts_namespace_ranges.sql'`,
		// 0082 rewrites 0075's triggers: both run again, in order.
		`DROP TABLE records_fts_pending`,
		`DELETE FROM migrations WHERE name = '0082_fts_pending.sql'`,
	} {
		if _, err := db.lite.Writer().ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var keys int
	if err := db.lite.Reader().QueryRowContext(ctx, `SELECT count(*) FROM namespace_keys`).Scan(&keys); err != nil || keys != len(namespaces) {
		t.Fatalf("%d namespace keys after the migration (%v), want %d", keys, err, len(namespaces))
	}
	if got := search(db); len(want) < 50 || !slices.Equal(got, want) {
		t.Errorf("searches after the migration (%d hits) differ from before (%d hits)", len(got), len(want))
	}
	title, _ := screen.Check("title", "Zebrafish feeding")
	content, _ := screen.Check("content", "The zebrafish are fed twice a day.")
	if _, err := db.Store(ctx, NewRecord{Namespace: "github/acme/web", Type: TypeNote, Title: title, Content: content,
		Confidence: 0.8, Writer: "t", Source: SourceStore, Status: StatusActive}); err != nil {
		t.Fatal(err)
	}
	for scope, want := range map[string]int{"github/acme/web": 1, "global": 0} {
		if hits, err := db.Search(ctx, SearchQuery{Text: "zebrafish", Namespaces: []string{scope}}); err != nil || len(hits) != want {
			t.Errorf("a new record searched in %s: %d hits (%v), want %d", scope, len(hits), err, want)
		}
	}
	chk, err := db.CheckIntegrity(ctx)
	if err != nil || chk.Damage != nil || chk.Repaired != "" {
		t.Errorf("integrity after the migration: %+v, %v", chk, err)
	}
}

// hitLines gives each hit as its id and score, to the last digit printed.
func hitLines(hits []Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = fmt.Sprintf("%s %.15g", h.Record.ID, h.BM25)
	}
	return out
}

// rankedLines gives ranked rows as hitLines gives hits.
func rankedLines(rs []ranked) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = fmt.Sprintf("%s %.15g", r.id, r.rank)
	}
	return out
}

// TestSearch_LeanChunks: the lean ranking looks records up a chunk at a
// time and stops only when the next row ranks strictly below the last one
// kept: a tie that runs past a chunk goes on, since a later row of the
// tie may have the lower id and come first. Here the tie's later rows are
// imported with earlier ids.
func TestSearch_LeanChunks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openTestDB(t)
	store := func(title, content string) { storeNote(t, db, "global", title, content) }
	const limit = 5
	for i := range 3 { // better than the tie
		store(fmt.Sprintf("webhook webhook %d", i), strings.Repeat("webhook ", i+2))
	}
	for range 10 { // the tie, in rowid order
		store("Retry the webhook", "Retry deliveries with backoff.")
	}
	var items []ImportItem
	for i := range 2 { // the tie's end, with the earliest ids
		items = append(items, ImportItem{ID: fmt.Sprintf("01HZX00000000000000000%04d", i), Namespace: "global",
			Type: TypeNote, Title: screened(t, "Retry the webhook"), Content: screened(t, "Retry deliveries with backoff."), Confidence: 0.8, Status: StatusActive, Writer: "t", Source: SourceImport})
	}
	if _, err := db.Import(ctx, items, ImportOptions{Client: "t", AsActive: true}); err != nil {
		t.Fatal(err)
	}
	for i := range 10 { // worse than the tie
		store(fmt.Sprintf("note %d", i), "a long note that names the webhook once among many other words of no interest "+strings.Repeat("filler ", 30+i))
	}
	if leanChunk(limit) != 13 || leanDepth(limit) <= 15 {
		t.Fatalf("the corpus assumes a chunk of 13 and a depth past the tie; chunk %d, depth %d", leanChunk(limit), leanDepth(limit))
	}
	got, want, ok := leanAndFull(t, db, SearchQuery{Text: "webhook", Namespaces: []string{"global"}, Limit: limit})
	if !ok {
		t.Fatal("the lean ranking did not settle the answer")
	}
	if g, w := rankedLines(got), rankedLines(want); !slices.Equal(g, w) {
		t.Errorf("lean:\n%v\nwant:\n%v", g, w)
	}
	if !strings.HasPrefix(got[limit-1].id, "01HZX") {
		t.Errorf("the last hit is %s, want an imported twin with an early id", got[limit-1].id)
	}
}

// leanAndFull ranks q's words in its one namespace both ways: the lean
// ranking (and whether it settled the answer) and rankTx's.
func leanAndFull(t *testing.T, db *DB, q SearchQuery) (lean, full []ranked, ok bool) {
	t.Helper()
	ctx := context.Background()
	if err := db.read(ctx, "test", func(tx *txn) (err error) {
		keys, err := db.namespaceKeysTx(ctx, tx, q.Namespaces, db.eng.Gen())
		if err != nil || len(keys) != 1 {
			return fmt.Errorf("keys %v: %v", keys, err)
		}
		rows := &fts.RowRange{Lo: keys[0] << fts.SeqBits, Hi: keys[0]<<fts.SeqBits | fts.SeqMask}
		x := fulltext.Expand(fulltext.QueryWords(q.Text))
		all := "{title content} : (" + fts.Quoted(x.Terms(), " OR ") + ")"
		if lean, ok, err = db.rankLeanTx(ctx, tx, all, 0, x.RankWords(), rows, q, nil, q.Limit); err != nil {
			return err
		}
		full, err = rankTx(ctx, tx, wordIndex, all, []any{0, x.RankWords()}, rows, q, nil, q.Limit)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return lean, full, ok
}

// TestSearch_LeanTieBelowHits: a tie across the lean ranking's depth that
// ranks below the hits kept settles the answer all the same (every row
// past the depth ranks below them too); one that reaches the last hit kept
// does not.
func TestSearch_LeanTieBelowHits(t *testing.T) {
	t.Parallel()
	db := openTestDB(t)
	const limit = 3
	for i := range limit { // the hits, each better than the tie
		storeNote(t, db, "global", fmt.Sprintf("webhook webhook %d", i), strings.Repeat("webhook ", i+2))
	}
	for range leanDepth(limit) + 5 { // the tie, across the depth
		storeNote(t, db, "global", "Retry the webhook", "Retry deliveries with backoff.")
	}
	got, want, ok := leanAndFull(t, db, SearchQuery{Text: "webhook", Namespaces: []string{"global"}, Limit: limit})
	if !ok {
		t.Fatal("a tie below the hits kept: the lean ranking did not settle the answer")
	}
	if g, w := rankedLines(got), rankedLines(want); !slices.Equal(g, w) {
		t.Errorf("lean:\n%v\nwant:\n%v", g, w)
	}
	// One more hit asked for: the last one kept is in the tie, which runs
	// past the depth.
	if _, _, ok := leanAndFull(t, db, SearchQuery{Text: "webhook", Namespaces: []string{"global"}, Limit: limit + 1}); ok {
		t.Error("a tie from the last hit kept across the depth: the lean ranking settled the answer")
	}
}

// TestSearch_LeanShare: the lean ranking's first chunk of lookups is sized
// by the share of looked-up rows it kept lately: limit and two more while
// nearly all are live, a whole chunk once most are not; the hits are the
// full ranking's either way.
func TestSearch_LeanShare(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		share float64
		want  int
	}{{1, 22}, {0.95, 24}, {0.8, 27}, {0.5, 28}, {0, 28}} {
		if got := firstLeanChunk(20, c.share); got != c.want {
			t.Errorf("firstLeanChunk(20, %v) = %d, want %d", c.share, got, c.want)
		}
	}
	ctx := context.Background()
	db := openTestDB(t)
	const limit = 5
	var ids []string
	for i := range 40 {
		rec := storeNote(t, db, "global", fmt.Sprintf("webhook %d", i), strings.Repeat("webhook ", 1+i%7)+"retries")
		ids = append(ids, rec.ID)
	}
	q := SearchQuery{Text: "webhook", Namespaces: []string{"global"}, Limit: limit}
	if _, want, ok := leanAndFull(t, db, q); !ok || db.lean.get() != 1 {
		t.Fatalf("all live: settled %v, share %v, want 1", ok, db.lean.get())
	} else if len(want) != limit {
		t.Fatalf("%d hits, want %d", len(want), limit)
	}
	reason := screened(t, "obsolete")
	for i, id := range ids {
		if i%2 == 0 { // one in two forgotten: indexed still, never found
			if _, err := db.Forget(ctx, id, 1, reason, "t"); err != nil {
				t.Fatal(err)
			}
		}
	}
	settled := 0
	for range 20 {
		got, want, ok := leanAndFull(t, db, q)
		if ok {
			settled++
			if !slices.Equal(rankedLines(got), rankedLines(want)) {
				t.Fatalf("lean:\n%v\nwant:\n%v", rankedLines(got), rankedLines(want))
			}
		}
	}
	if settled == 0 {
		t.Error("the lean ranking settled no search with one row in two forgotten")
	}
	if share := db.lean.get(); share > 0.65 || firstLeanChunk(limit, share) < limit+5 {
		t.Errorf("one row in two forgotten: share %v, first chunk %d; want at most 0.65, and at least %d",
			share, firstLeanChunk(limit, share), limit+5)
	}
}

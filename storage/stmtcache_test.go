package storage

import (
	"context"
	"database/sql"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hearth-memory/hearth/storage/screen"
)

// TestStmtCache_ReusesStatements checks that a store's INSERT is prepared
// once, after its transaction, and then served from the cache; and that a
// schema change under a cached statement does not break it.
func TestStmtCache_ReusesStatements(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(t.TempDir(), "db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	store := func(title string) *Record {
		t.Helper()
		tt, _ := screen.Check("title", title)
		c, _ := screen.Check("content", "content of "+title)
		r, err := db.Store(ctx, NewRecord{Namespace: "global", Type: TypeNote, Title: tt, Content: c,
			Confidence: 0.8, Writer: "t", Source: SourceStore, Status: StatusActive})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	insert := func() *sql.Stmt {
		for q, st := range db.lite.Statements(true) {
			if strings.Contains(q, "INSERT INTO records (") {
				return st
			}
		}
		return nil
	}
	if insert() != nil {
		t.Fatalf("the record INSERT is cached before any store")
	}
	store("first")
	first := insert()
	if first == nil {
		t.Fatalf("the record INSERT was not cached after a store")
	}
	// A schema change invalidates prepared statements; SQLite re-prepares
	// them on their next step.
	if _, err := db.lite.Writer().ExecContext(ctx, `CREATE TABLE scratch (x)`); err != nil {
		t.Fatal(err)
	}
	r := store("second")
	got, err := db.Get(ctx, []string{r.ID})
	if err != nil || len(got) != 1 || got[0].Title != "second" {
		t.Fatalf("get after schema change: %v %v", got, err)
	}
	if insert() != first {
		t.Errorf("the cached INSERT was replaced instead of reused")
	}
}

// TestStmtCache_BootstrapStatements: the statements Bootstrap runs once per
// namespace and section come from the reader's cache after the first
// packet, and the packet is the same whether they were cached or not.
func TestStmtCache_BootstrapStatements(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(t.TempDir(), "db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for i, ns := range []string{"global", "github/acme/api", "global"} {
		tt, _ := screen.Check("title", "Rule "+string(rune('a'+i)))
		c, _ := screen.Check("content", "Always do the thing.")
		if _, err := db.Store(ctx, NewRecord{Namespace: ns, Type: TypeConstraint, Title: tt, Content: c,
			Confidence: 0.8, Writer: "t", Source: SourceStore, Status: StatusActive}); err != nil {
			t.Fatal(err)
		}
	}
	cached := func() int {
		n := 0
		for q := range db.lite.Statements(false) {
			if strings.Contains(q, "FROM bootstrap_rank AS b") || strings.Contains(q, "CROSS JOIN bootstrap_rank AS b") {
				n++
			}
		}
		return n
	}
	// Two of three: the packet then looks for a record to flag as well.
	q := BootstrapQuery{Namespaces: []string{"github/acme/api", "global"}, Limit: 2}
	first, err := db.Bootstrap(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if n := cached(); n != 2 {
		t.Fatalf("%d bootstrap statements cached after a packet, want 2", n)
	}
	again, err := db.Bootstrap(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Items) != 2 || first.Total != 3 || first.Total != again.Total || !slices.Equal(first.Items, again.Items) {
		t.Errorf("from the cache: %+v, uncached %+v", again, first)
	}
}

// TestSearch_ScopeIndexConsistent checks that the full-text index agrees
// with its content table (FTS5's integrity-check) and that a rebuild, the
// standard repair, keeps scoped search working: the scope token is a column
// of records, not something only the triggers know (migration 0006).
func TestSearch_ScopeIndexConsistent(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(t.TempDir(), "db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tt, _ := screen.Check("title", "Deploy window")
	c, _ := screen.Check("content", "Deploys happen on Tuesdays.")
	for _, ns := range []string{"github/acme/api", "github/acme/web", "global"} {
		if _, err := db.Store(ctx, NewRecord{Namespace: ns, Type: TypeDecision, Title: tt, Content: c,
			Confidence: 0.8, Writer: "t", Source: SourceStore, Status: StatusActive}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.RenameNamespaces(ctx, []Rename{{From: "github/acme", To: "github/corp"}}); err != nil {
		t.Fatal(err)
	}
	find := func(ns string) int {
		t.Helper()
		hits, err := db.Search(ctx, SearchQuery{Text: "deploy tuesday", Namespaces: []string{ns}})
		if err != nil {
			t.Fatal(err)
		}
		return len(hits)
	}
	for _, step := range []string{"integrity-check", "rebuild", "integrity-check"} {
		if _, err := db.lite.Writer().ExecContext(ctx, `INSERT INTO records_fts (records_fts) VALUES (?)`, step); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		if got := find("github/corp/api"); got != 1 {
			t.Errorf("after %s: %d hits in github/corp/api, want 1", step, got)
		}
	}
}

package storage

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/hearth-memory/hearth/storage/screen"
)

// TestStmtCache_ReusesStatements checks that a write's statements are
// prepared once, after its transaction, and then served from the cache; and
// that a schema change under a cached statement does not break it.
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
	store("first")
	db.writerStmts.mu.RLock()
	cached := len(db.writerStmts.m)
	db.writerStmts.mu.RUnlock()
	if cached == 0 {
		t.Fatalf("no statement was cached after a store")
	}
	// A schema change invalidates prepared statements; SQLite re-prepares
	// them on their next step.
	if _, err := db.writer.ExecContext(ctx, `CREATE TABLE scratch (x)`); err != nil {
		t.Fatal(err)
	}
	r := store("second")
	got, err := db.Get(ctx, []string{r.ID})
	if err != nil || len(got) != 1 || got[0].Title != "second" {
		t.Fatalf("get after schema change: %v %v", got, err)
	}
	db.writerStmts.mu.RLock()
	after := len(db.writerStmts.m)
	db.writerStmts.mu.RUnlock()
	if after != cached {
		t.Errorf("cache grew from %d to %d for the same statements", cached, after)
	}
}

// TestSearch_ScopeTokenFollowsRename checks that the full-text scope token
// (migration 0006) moves with a record's namespace.
func TestSearch_ScopeTokenFollowsRename(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(t.TempDir(), "db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tt, _ := screen.Check("title", "Deploy window")
	c, _ := screen.Check("content", "Deploys happen on Tuesdays.")
	rec, err := db.Store(ctx, NewRecord{Namespace: "github/old/api", Type: TypeDecision, Title: tt, Content: c,
		Confidence: 0.8, Writer: "t", Source: SourceStore, Status: StatusActive})
	if err != nil {
		t.Fatal(err)
	}
	find := func(ns string) int {
		hits, err := db.Search(ctx, SearchQuery{Text: "deploy tuesday", Namespaces: []string{ns}})
		if err != nil {
			t.Fatal(err)
		}
		return len(hits)
	}
	if got := find("github/old/api"); got != 1 {
		t.Fatalf("before rename: %d hits, want 1", got)
	}
	if _, err := db.RenameNamespaces(ctx, []Rename{{From: "github/old", To: "github/new"}}); err != nil {
		t.Fatal(err)
	}
	if got := find("github/new/api"); got != 1 {
		t.Errorf("after rename, new namespace: %d hits, want 1 (%s)", got, rec.ID)
	}
	if got := find("github/old/api"); got != 0 {
		t.Errorf("after rename, old namespace: %d hits, want 0", got)
	}
}

package storage_test

import (
	"slices"
	"testing"

	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/storagetest"
)

// TestDB_Search_AllRepositories holds the storage half of docs/design.md R-N5: a hub's
// search admits every repository namespace besides its own chain, and
// nothing else.
func TestDB_Search_AllRepositories(t *testing.T) {
	t.Parallel()
	db := storagetest.Open(t)
	for _, ns := range []string{
		"github/acme/api", "gitea/team/tools", "local/scratch", "projects/platform",
		"projects/other", "topics/go", "global",
	} {
		storagetest.Store(t, db, rec(t, ns, "Deploy "+ns, "How we deploy."))
	}
	// Not a namespace the API accepts: here to show that the match needs the
	// whole first segment.
	odd := storagetest.Store(t, db, rec(t, "local/odd", "Deploy odd", "How we deploy."))
	if err := db.ExecRaw(ctx, `UPDATE records SET namespace = 'githubx/x/y' WHERE id = ?`, odd.ID); err != nil {
		t.Fatal(err)
	}
	search := func(q storage.SearchQuery) []string {
		t.Helper()
		q.Text, q.Limit = "deploy", 50
		hits, err := db.Search(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, h := range hits {
			out = append(out, h.Record.Namespace)
		}
		slices.Sort(out)
		return out
	}
	hub := search(storage.SearchQuery{Namespaces: []string{"projects/platform", "global"}, AllRepositories: true})
	if want := []string{"gitea/team/tools", "github/acme/api", "global", "local/scratch", "projects/platform"}; !slices.Equal(hub, want) {
		t.Errorf("hub: got %v, want %v", hub, want)
	}
	plain := search(storage.SearchQuery{Namespaces: []string{"projects/platform", "global"}})
	if want := []string{"global", "projects/platform"}; !slices.Equal(plain, want) {
		t.Errorf("not a hub: got %v, want %v", plain, want)
	}
}

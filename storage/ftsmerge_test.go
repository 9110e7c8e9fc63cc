package storage_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/storagetest"
)

// TestMergeIndex: stores written one by one leave the full-text index in
// several segments; merging steps until none is left brings it to one, and
// searches find and rank exactly what they did, the index still sound.
func TestMergeIndex(t *testing.T) {
	db := storagetest.Open(t)
	words := []string{"retry", "cache", "deploy", "schema", "billing", "webhook"}
	for i := range 40 {
		storagetest.Store(t, db, storage.NewRecord{
			Title:   storagetest.Text(t, fmt.Sprintf("%s note %d", words[i%len(words)], i)),
			Content: storagetest.Text(t, fmt.Sprintf("about %s and %s, entry %d", words[i%len(words)], words[(i*5+1)%len(words)], i)),
		})
	}
	before, err := db.IndexSegments(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if before < 2 {
		t.Fatalf("%d segments before merging: the test needs several", before)
	}
	search := func() [][]string {
		var out [][]string
		for _, q := range []string{"retry", "cache deploy", "billing webhook schema", "entry"} {
			hits, err := db.Search(ctx, storage.SearchQuery{Text: q, Limit: 50})
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, h := range hits {
				ids = append(ids, fmt.Sprintf("%s %.12f %s", h.Record.ID, h.BM25, h.Snippet))
			}
			out = append(out, ids)
		}
		return out
	}
	want := search()

	steps, err := db.MergeIndexFully(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	if steps == 0 || steps == 100 {
		t.Errorf("merged in %d steps, want some and fewer than the bound", steps)
	}
	if n, err := db.IndexSegments(ctx); err != nil || n != 1 {
		t.Errorf("%d segments after merging (%v), want 1", n, err)
	}
	if more, err := db.MergeIndex(ctx); err != nil || more {
		t.Errorf("a merge step after the full merge: more %v, err %v", more, err)
	}
	if got := search(); !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("searches after merging:\n%v\nwant\n%v", got, want)
	}
	chk, err := db.CheckIntegrity(ctx)
	if err != nil || chk.Damage != nil || chk.Repaired != "" {
		t.Errorf("integrity after merging: %+v, %v", chk, err)
	}
}

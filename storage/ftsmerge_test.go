package storage_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/storagetest"
)

// indexSearches runs a fixed set of searches over db and returns, for each,
// its hits' ids, scores and snippets: what a change to how the index is
// stored must leave as it was.
func indexSearches(t *testing.T, db *storage.DB) [][]string {
	t.Helper()
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

// soundAfterMerging holds db's searches to find and rank what they did
// before merging (want, from indexSearches), and the file to be sound.
func soundAfterMerging(t *testing.T, db *storage.DB, want [][]string) {
	t.Helper()
	if got := indexSearches(t, db); !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("searches after merging:\n%v\nwant\n%v", got, want)
	}
	chk, err := db.CheckIntegrity(ctx)
	if err != nil || chk.Damage != nil || chk.Repaired != "" {
		t.Errorf("integrity after merging: %+v, %v", chk, err)
	}
}

// segmentedStore stores n records in db, each in a commit of its own (a
// segment of the full-text index each), and returns its segments and its
// searches (indexSearches) then. db is opened with the idle writer's
// merging off (storage.WithTidyAfter(-1)): on a busy machine the commits
// can come further apart than the writer's idle wait, and it would merge
// while they are made.
func segmentedStore(t *testing.T, db *storage.DB, n int) (segments int, searches [][]string) {
	t.Helper()
	words := []string{"retry", "cache", "deploy", "schema", "billing", "webhook"}
	for i := range n {
		storagetest.Store(t, db, storage.NewRecord{
			Title:   storagetest.Text(t, fmt.Sprintf("%s note %d", words[i%len(words)], i)),
			Content: storagetest.Text(t, fmt.Sprintf("about %s and %s, entry %d", words[i%len(words)], words[(i*5+1)%len(words)], i)),
		})
	}
	segments, err := db.IndexSegments(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return segments, indexSearches(t, db)
}

// TestTidyIndex: commits leave a level of the full-text index unmerged
// until it holds 8 segments (migration 0087); once writes pause, the
// writer merges on its own the levels that hold 4 or more, until none is
// left, and searches find and rank exactly what they did.
func TestTidyIndex(t *testing.T) {
	storagetest.SQLiteOnly(t, "FTS5's index segments and their merging; PostgreSQL's GIN index has none")
	// The records are stored with the idle writer's merging off, then the
	// file is opened again as a server opens it and one more record
	// stored: the commit that starts the idle writer's wait.
	path := storagetest.Place(t)
	filled, err := storage.Open(ctx, path, storage.WithTidyAfter(-1))
	if err != nil {
		t.Fatal(err)
	}
	before, _ := segmentedStore(t, filled, 120)
	if err := filled.Close(); err != nil {
		t.Fatal(err)
	}
	db := storagetest.OpenPath(t, path)
	storagetest.Store(t, db, storage.NewRecord{Title: storagetest.Text(t, "unrelated"), Content: storagetest.Text(t, "nothing the searches ask for")})
	// Merging changes no result, so the searches may be read before or
	// after the idle writer's first step.
	want := indexSearches(t, db)

	// The idle writer's steps start a moment after the last commit and
	// go on, one after another, until none merges anything.
	waitFor(t, "the idle writer's first merge step", func() bool { return db.IndexTidySteps() > 0 })
	last, since := db.IndexTidySteps(), time.Now()
	waitFor(t, "the idle writer's merge steps to stop", func() bool {
		if n := db.IndexTidySteps(); n != last {
			last, since = n, time.Now()
		}
		return time.Since(since) > time.Second
	})
	if steps, err := db.TidyIndex(ctx); err != nil || steps != 0 {
		t.Errorf("after the idle writer stopped, TidyIndex merged in %d steps (%v): want nothing left", steps, err)
	}
	after, err := db.IndexSegments(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d segments after 120 commits; %d after %d merge steps of the idle writer", before, after, last)
	if after >= before {
		t.Errorf("%d segments after the idle writer's merging, %d before: want fewer", after, before)
	}
	soundAfterMerging(t, db, want)
}

// TestMergeIndex: stores written one by one leave the full-text index in
// several segments; merging steps until none is left brings it to one, and
// searches find and rank exactly what they did, the index still sound.
func TestMergeIndex(t *testing.T) {
	storagetest.SQLiteOnly(t, "FTS5's index segments and their merging; PostgreSQL's GIN index has none")
	db := storagetest.Open(t, storage.WithTidyAfter(-1))
	before, want := segmentedStore(t, db, 40)
	if before < 2 {
		t.Fatalf("%d segments before merging: the test needs several", before)
	}

	steps, err := db.MergeIndexFully(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	if steps == 0 || steps == 100 || db.IndexTidySteps() != 0 {
		t.Errorf("merged in %d steps (the idle writer, which is off, in %d), want some and fewer than the bound", steps, db.IndexTidySteps())
	}
	if n, err := db.IndexSegments(ctx); err != nil || n != 1 {
		t.Errorf("%d segments after merging (%v), want 1", n, err)
	}
	if more, err := db.MergeIndex(ctx); err != nil || more {
		t.Errorf("a merge step after the full merge: more %v, err %v", more, err)
	}
	soundAfterMerging(t, db, want)
}

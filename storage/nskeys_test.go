package storage

import (
	"context"
	"testing"
)

// TestSearch_NamespaceKeyCache: a search remembers the namespaces' keys,
// and those without one for the write generation only, so a record stored
// in a namespace the last search found empty is found by the next search;
// keys found are the ones namespace_keys holds.
func TestSearch_NamespaceKeyCache(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openTestDB(t)
	store := func(ns, title string) { storeNote(t, db, ns, title, "about caches") }
	search := func(namespaces ...string) []string {
		t.Helper()
		hits, err := db.Search(ctx, SearchQuery{Text: "caches", Namespaces: namespaces, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		var titles []string
		for _, h := range hits {
			titles = append(titles, h.Record.Title)
		}
		return titles
	}
	store("github/acme/api", "api")
	if got := search("github/acme/api", "github/acme/web"); len(got) != 1 || got[0] != "api" {
		t.Fatalf("found %v, want [api]", got)
	}
	// Remembered: api's key, and web without one at this generation.
	db.nsKeys.mu.Lock()
	_, known := db.nsKeys.keys["github/acme/api"]
	absent := db.nsKeys.absent["github/acme/web"] && db.nsKeys.gen == db.eng.Gen()
	db.nsKeys.mu.Unlock()
	if !known || !absent {
		t.Fatalf("cache: api known %v, web absent %v; want both", known, absent)
	}
	// A store gives web its key; the next search finds its record.
	store("github/acme/web", "web")
	if got := search("github/acme/api", "github/acme/web"); len(got) != 2 {
		t.Fatalf("after storing in web, found %v, want api and web", got)
	}
	if got := search("github/acme/web"); len(got) != 1 || got[0] != "web" {
		t.Fatalf("web alone: found %v, want [web]", got)
	}
	// The remembered keys are namespace_keys' own.
	for _, ns := range []string{"github/acme/api", "github/acme/web"} {
		var want int64
		if err := db.lite.Reader().QueryRowContext(ctx, `SELECT key FROM namespace_keys WHERE namespace = ?`, ns).Scan(&want); err != nil {
			t.Fatal(err)
		}
		db.nsKeys.mu.Lock()
		got, ok := db.nsKeys.keys[ns]
		db.nsKeys.mu.Unlock()
		if !ok || got != want {
			t.Errorf("%s: cached key %d (%v), want %d", ns, got, ok, want)
		}
	}
}

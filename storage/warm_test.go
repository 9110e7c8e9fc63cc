package storage

import (
	"context"
	"testing"
)

// TestWarm: a warmed store holds an open connection in the readers' pool
// and in the vocabulary pool before any read, so its first search opens
// none.
func TestWarm(t *testing.T) {
	t.Parallel()
	db := openTestDB(t)
	if n := db.lite.Reader().Stats().OpenConnections + db.lite.Vocab().Stats().OpenConnections; n != 0 {
		t.Fatalf("a store just opened holds %d read connections, want 0 (the premise)", n)
	}
	if err := db.Warm(context.Background()); err != nil {
		t.Fatal(err)
	}
	if r, v := db.lite.Reader().Stats().OpenConnections, db.lite.Vocab().Stats().OpenConnections; r != 1 || v != 1 {
		t.Fatalf("after Warm: %d reader and %d vocabulary connections, want 1 and 1", r, v)
	}
	storeNote(t, db, "github/acme/api", "Deploy procedure for billing", "Deploy billing once the canary passes.")
	if _, err := db.Search(context.Background(), SearchQuery{Text: "deploy billing", Namespaces: []string{"github/acme/api"}}); err != nil {
		t.Fatal(err)
	}
	if r, v := db.lite.Reader().Stats().OpenConnections, db.lite.Vocab().Stats().OpenConnections; r != 1 || v != 1 {
		t.Errorf("after the first search: %d reader and %d vocabulary connections, want the warmed 1 and 1", r, v)
	}
}

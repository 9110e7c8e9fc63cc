package server

import (
	"context"
	"slices"
	"testing"

	"github.com/hearth-memory/hearth/gateway"
	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
	"github.com/hearth-memory/hearth/server/options"
	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/storagetest"
)

// TestSearch_Scopes: a search reply names the namespaces it read, so an
// empty reply to a search without a namespace says it read global alone
// (issue 42).
func TestSearch_Scopes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := storagetest.Open(t)
	srv, err := New(db, Config{Marshal: gateway.MarshalResult, Options: options.Default()})
	if err != nil {
		t.Fatal(err)
	}
	m := &memoryService{Server: srv}
	storagetest.Store(t, db, storage.NewRecord{Namespace: "github/acme/api", Type: storage.TypeDecision,
		Title: storagetest.Text(t, "Retry policy"), Content: storagetest.Text(t, "Retry idempotent calls three times with exponential backoff."),
		Status: storage.StatusActive})
	for _, c := range []struct {
		req  *hearthv1.SearchRequest
		hits int
		want []string
	}{
		{&hearthv1.SearchRequest{Query: "retry policy"}, 0, []string{"global"}},
		{&hearthv1.SearchRequest{Query: "retry policy", Namespace: "github/acme/api"}, 1, []string{"github/acme/api", "global"}},
		{&hearthv1.SearchRequest{Query: "retry policy", Remote: "git@github.com:acme/api.git"}, 1, []string{"github/acme/api", "global"}},
		{&hearthv1.SearchRequest{Query: "retry policy", Namespace: "github/acme/api", Within: withinNamespace}, 1, []string{"github/acme/api"}},
		{&hearthv1.SearchRequest{Query: "retry policy", Within: withinAll}, 1, nil},
	} {
		got, err := m.Search(ctx, c.req)
		if err != nil {
			t.Fatalf("%v: %v", c.req, err)
		}
		if len(got.GetHits()) != c.hits || !slices.Equal(got.GetScopes(), c.want) {
			t.Errorf("%v: %d hits, scopes %q; want %d, %q", c.req, len(got.GetHits()), got.GetScopes(), c.hits, c.want)
		}
	}
}

package storage_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/storagetest"
)

// TestCoverage_NamedWords: a query's named words are those it writes with a
// capital after their first letter, anywhere, and those it capitalises
// where no sentence starts that no record holds (docs/abstention.md).
func TestCoverage_NamedWords(t *testing.T) {
	t.Parallel()
	db := storagetest.Open(t)
	storagetest.Store(t, db, rec(t, "global", "Local database port", "The local Postgres listens on port 5433."))
	for i := range storage.MinCoverageRecords {
		storagetest.Store(t, db, rec(t, "global", fmt.Sprintf("Lunch rota week %d", i), "Order from the usual place."))
	}
	// Word weights are the last ranked search's (QueryCoverage).
	if _, err := db.Search(ctx, storage.SearchQuery{Text: "usual place", Namespaces: []string{"global"}, Limit: 5}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		query string
		want  []string
	}{
		{"how do we shard the Kafka topics", []string{"kafka"}},
		{"which GraphQL gateway fronts the pool", []string{"graphql"}},
		{"IPv6 addressing plan", []string{"ipv6"}},           // a capital inside a word, at a sentence's start too
		{"Kafka topics and their shards", nil},               // a sentence's first word
		{"thanks. Kafka is slow: Kafka again", nil},          // each after a sentence's end
		{"which port does the local Postgres use", nil},      // capitalised, but a record holds it
		{"sign it with the HSM", []string{"hsm"}},            // an acronym
		{"what is the usual place for lunch", nil},           // no capital
		{"the Deploy freeze\nKafka lag", []string{"deploy"}}, // a line starts a sentence
	} {
		cov, err := db.QueryCoverage(ctx, c.query)
		if err != nil {
			t.Fatal(err)
		}
		if got := cov.NamedWords(); !slices.Equal(got, c.want) {
			t.Errorf("%q: named %q, want %q", c.query, got, c.want)
		}
	}
}

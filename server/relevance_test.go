package server

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/hearth-memory/hearth/gateway"
	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
	"github.com/hearth-memory/hearth/server/options"
	"github.com/hearth-memory/hearth/server/ranking"
	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/storagetest"
)

// abstainNS is the namespace of abstainStore's decisions.
const abstainNS = "github/acme/api"

// abstainRecords are abstainStore's decisions, title then content.
var abstainRecords = [][2]string{
	{"Retry policy for outbound calls", "Retry idempotent outbound calls three times with exponential backoff."},
	{"Postgres connection pool", "At most 20 connections per pod; the pool waits instead of opening more."},
	{"Deploys on Fridays", "No deploys on Friday afternoons; the freeze is in the deploy calendar."},
	{"Logging format", "JSON logs in production with a request id on every line."},
	{"Invoice numbers", "Invoice numbers are gapless per legal entity and year."},
	{"Local database port", "The local Postgres listens on port 5433, not 5432."},
}

// abstainStore is a store of abstainRecords in abstainNS and, in global,
// enough unrelated notes that word weights mean something
// (storage.MinCoverageRecords).
func abstainStore(t testing.TB) *storage.DB {
	t.Helper()
	return fillAbstainStore(t, storagetest.Open(t))
}

// fillAbstainStore stores abstainStore's records in db and returns it.
func fillAbstainStore(t testing.TB, db *storage.DB) *storage.DB {
	t.Helper()
	for _, r := range abstainRecords {
		storagetest.Store(t, db, storage.NewRecord{Namespace: abstainNS, Type: storage.TypeDecision,
			Title: storagetest.Text(t, r[0]), Content: storagetest.Text(t, r[1]), Status: storage.StatusActive})
	}
	for i := range storage.MinCoverageRecords {
		storagetest.Store(t, db, storage.NewRecord{Namespace: "global", Type: storage.TypeNote,
			Title: storagetest.Text(t, fmt.Sprintf("Lunch rota week %d", i)), Content: storagetest.Text(t, fmt.Sprintf("Team lunch rota, week %d: order from the usual place.", i)),
			Status: storage.StatusActive})
	}
	return db
}

// TestSearch_Abstain holds the relevance bar (docs/abstention.md) on a
// built set: a prompt whose answer is stored gets its hits with abstain;
// one whose rare words no record holds gets none with abstain, though
// without it the shared common words still find hits (the hook injected
// those before), as does one that names a thing no hit holds or shares a
// single word with a record. Every hit's why says its coverage. min_coverage 0 never
// abstains, nor does a store too small for word weights to mean anything.
func TestSearch_Abstain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := abstainStore(t)
	search := func(t *testing.T, bar float64, query string, abstain bool) []*hearthv1.SearchHit {
		t.Helper()
		opts := options.Default()
		opts.MinCoverage = bar
		srv, err := New(db, Config{Marshal: gateway.MarshalResult, Options: opts})
		if err != nil {
			t.Fatal(err)
		}
		got, err := (&memoryService{Server: srv}).Search(ctx, &hearthv1.SearchRequest{Query: query, Namespace: abstainNS, Limit: 3, Abstain: abstain})
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range got.GetHits() {
			if !strings.Contains(h.GetWhy(), ", covers ") {
				t.Errorf("hit %q: why %q says no coverage", h.GetTitle(), h.GetWhy())
			}
		}
		return got.GetHits()
	}
	answerable := []string{"how many times do we retry outbound calls", "which port does the local postgres use"}
	unanswerable := []struct {
		query string
		bar   float64
	}{
		// Under the default bar one record holds two of its words ("per
		// pod") and covers 0.32 of it: a higher bar abstains.
		{"how do we shard the kafka topics per pod", 0.35},
		{"which graphql gateway fronts the calls", options.DefaultMinCoverage},
		// Memory knows the retry policy, not Kafka: a named thing no hit holds.
		{"retry policy for outbound calls through Kafka", options.DefaultMinCoverage},
		// One word shared, however rare: not enough.
		{"summarize the freeze", options.DefaultMinCoverage},
	}
	for _, q := range answerable {
		if hits := search(t, options.DefaultMinCoverage, q, true); len(hits) == 0 {
			t.Errorf("%q: abstained, want its answer", q)
		}
	}
	for _, c := range unanswerable {
		if hits := search(t, c.bar, c.query, false); len(hits) == 0 {
			t.Fatalf("%q: no hit without abstain: the case tests nothing", c.query)
		}
		if hits := search(t, c.bar, c.query, true); len(hits) != 0 {
			t.Errorf("%q: %d hits with abstain at %v (first %q, %s), want none", c.query, len(hits), c.bar, hits[0].GetTitle(), hits[0].GetWhy())
		}
		if hits := search(t, 0, c.query, true); len(hits) == 0 {
			t.Errorf("%q: min_coverage 0 abstained", c.query)
		}
	}
	t.Run("SmallStore", func(t *testing.T) {
		t.Parallel()
		small := storagetest.Open(t)
		storagetest.Store(t, small, storage.NewRecord{Namespace: abstainNS, Type: storage.TypeDecision,
			Title: storagetest.Text(t, "Logging format"), Content: storagetest.Text(t, "JSON logs in production."), Status: storage.StatusActive})
		srv, err := New(small, Config{Marshal: gateway.MarshalResult, Options: options.Default()})
		if err != nil {
			t.Fatal(err)
		}
		got, err := (&memoryService{Server: srv}).Search(ctx, &hearthv1.SearchRequest{Query: "which graphql gateway fronts the logs", Namespace: abstainNS, Abstain: true})
		if err != nil || len(got.GetHits()) != 1 {
			t.Errorf("a one-record store abstained (%v, %v): its word weights tell nothing", got, err)
		}
	})
}

// TestByCoverage: under abstain, hits are ordered by reciprocal rank fusion
// of their ranking's order and their order by coverage (ties sharing the
// better rank), an equal fusion keeping the ranking's order; coverage and
// held words move with their hit.
func TestByCoverage(t *testing.T) {
	t.Parallel()
	hits := make([]ranking.Hit, 4)
	held := make([][]string, 4)
	for i, id := range []string{"a", "b", "c", "d"} {
		hits[i] = ranking.Hit{Record: &storage.Record{ID: id}}
		held[i] = []string{id}
	}
	// d covers most: fused 1/64 + 1/61 passes c (1/63 + 1/62, tied for
	// second by coverage with a and b) but not b (1/62 + 1/62).
	hits, covers, held := byCoverage(hits, []float64{0.1, 0.1, 0.1, 0.9}, held)
	var got []string
	for i, h := range hits {
		got = append(got, h.Record.ID)
		if held[i][0] != h.Record.ID {
			t.Errorf("hit %s carries %s's held words", h.Record.ID, held[i][0])
		}
	}
	if want := []string{"a", "b", "d", "c"}; !slices.Equal(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
	if want := []float64{0.1, 0.1, 0.9, 0.1}; !slices.Equal(covers, want) {
		t.Errorf("coverage %v, want %v", covers, want)
	}
}

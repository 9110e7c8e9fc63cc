package storage_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/screen"
	"github.com/hearth-memory/hearth/storage/storagetest"
)

// recordedQueries is the size of the recorded-query benchmarks.
const recordedQueries = 100_000

// askGen makes developer-like recorded searches: a Zipf-distributed choice
// among 5,000 topics, each asked in one of several wordings (word order,
// inflections, stop words), from 2,000 sessions of 3 clients in 20
// namespaces, so grouping meets both repeats and new questions.
type askGen struct {
	rng    *rand.Rand
	zipf   *rand.Zipf
	topics [][3]string
}

func newAskGen(seed uint64) *askGen {
	rng := rand.New(rand.NewPCG(seed, seed^0x5bd1e995))
	verbs := []string{"run", "deploy", "configure", "rotate", "migrate", "build", "test", "cache", "index", "release"}
	nouns := []string{"migrations", "tokens", "webhooks", "workers", "queues", "schemas", "images", "backups", "logs",
		"metrics", "routes", "clients", "sessions", "records", "leases", "budgets", "anchors", "hooks", "proxies", "secrets"}
	var topics [][3]string
	for i := 0; len(topics) < 5000; i++ {
		topics = append(topics, [3]string{verbs[i%len(verbs)], nouns[(i/len(verbs))%len(nouns)], fmt.Sprintf("svc%d", i/(len(verbs)*len(nouns)))})
	}
	return &askGen{rng: rng, zipf: rand.NewZipf(rng, 1.1, 2, uint64(len(topics)-1)), topics: topics}
}

func (g *askGen) query() string {
	t := g.topics[g.zipf.Uint64()]
	switch g.rng.IntN(4) {
	case 0:
		return "How do we " + t[0] + " the " + t[1] + " of " + t[2] + "?"
	case 1:
		return t[2] + " " + t[1] + ": " + t[0] + "ning them"
	case 2:
		return "what is the way to " + t[0] + " " + t[1] + " in " + t[2]
	default:
		return t[1] + " " + t[0] + " " + t[2]
	}
}

func (g *askGen) ask(tb testing.TB) storage.Ask {
	q, err := screen.Check("query", g.query())
	if err != nil {
		tb.Fatal(err)
	}
	return storage.Ask{
		Namespace: fmt.Sprintf("github/acme/repo%d", g.rng.IntN(20)),
		Client:    []string{"claude-code", "codex", "ci"}[g.rng.IntN(3)],
		Session:   fmt.Sprintf("s%d", g.rng.IntN(2000)),
		Query:     q,
		Hits:      []string{fmt.Sprintf("01JD3M5ZK9Q8W7E6R5T4Y%05d", g.rng.IntN(10000))},
	}
}

// BenchmarkQuestionKey measures the grouping key of 100,000 recorded
// queries: the normalisation alone (words, stop words, Porter stems, order).
func BenchmarkQuestionKey(b *testing.B) {
	g := newAskGen(1)
	qs := make([]string, recordedQueries)
	for i := range qs {
		qs[i] = g.query()
	}
	b.ResetTimer()
	for b.Loop() {
		groups := map[string]int{}
		for _, q := range qs {
			groups[storage.QuestionKey(q)]++
		}
		if len(groups) < 1000 {
			b.Fatalf("%d groups of %d queries", len(groups), len(qs))
		}
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/100k-queries")
}

// recorded returns a store holding 100,000 recorded queries, recorded
// through RecordAsk and FlushAsks in batches of AskBatch (each batch one
// transaction), with the rate it took. The store lives as long as b.
func recorded(b *testing.B) (*storage.DB, float64) {
	b.Helper()
	db := storagetest.Open(b)
	g := newAskGen(2)
	start := time.Now()
	for i := range recordedQueries {
		db.RecordAsk(g.ask(b))
		if (i+1)%storage.AskBatch == 0 {
			if err := db.FlushAsks(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := db.FlushAsks(ctx); err != nil {
		b.Fatal(err)
	}
	return db, recordedQueries / time.Since(start).Seconds()
}

// BenchmarkRecordAsks reports how fast 100,000 recorded queries are
// grouped and written (asks/s), and then one more batch of AskBatch on the
// full store.
func BenchmarkRecordAsks(b *testing.B) {
	db, rate := recorded(b)
	g := newAskGen(3)
	b.ResetTimer()
	for b.Loop() {
		for range storage.AskBatch {
			db.RecordAsk(g.ask(b))
		}
		if err := db.FlushAsks(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(rate, "asks/s-first-100k")
	b.ReportMetric(float64(b.N*storage.AskBatch)/b.Elapsed().Seconds(), "asks/s-at-100k")
}

// BenchmarkQuestions measures memory_questions' read over 100,000 recorded
// queries: one scope chain, and every namespace; p50 and p95.
func BenchmarkQuestions(b *testing.B) {
	db, _ := recorded(b)
	for _, tc := range []struct {
		name  string
		chain []string
	}{
		{"chain", []string{"github/acme/repo3", "global"}},
		{"every-namespace", nil},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var lat []time.Duration
			for b.Loop() {
				start := time.Now()
				qs, err := db.Questions(ctx, storage.QuestionsQuery{Namespaces: tc.chain, Limit: 10})
				lat = append(lat, time.Since(start))
				if err != nil || len(qs) != 10 {
					b.Fatalf("%d questions, %v", len(qs), err)
				}
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*95/100].Microseconds())/1000, "p95-ms")
		})
	}
}

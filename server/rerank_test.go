package server

import (
	"cmp"
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hearth-memory/hearth/gateway"
	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
	"github.com/hearth-memory/hearth/server/models/modeltest"
	"github.com/hearth-memory/hearth/server/options"
	"github.com/hearth-memory/hearth/storage"
)

// rerankQuery shares words with several of abstainRecords, and its
// stopwords, which full text ignores and the stand-in rerank server counts,
// make the two orders differ.
const rerankQuery = "is the pool connections per pod in use on friday or no"

// rerankSearch runs memory_search over db with opts as the prompt hook asks
// (abstain, 10 hits, so every candidate comes back).
func rerankSearch(t testing.TB, db *storage.DB, opts options.Options, query string, abstain bool) *hearthv1.SearchResponse {
	t.Helper()
	srv, err := New(db, Config{Marshal: gateway.MarshalResult, Options: opts})
	if err != nil {
		t.Fatal(err)
	}
	got, err := (&memoryService{Server: srv}).Search(context.Background(),
		&hearthv1.SearchRequest{Query: query, Namespace: abstainNS, Limit: 10, Abstain: abstain})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// rerankOptions are the default options with the stand-in rerank server
// at url.
// rerankOptions point at the stand-in with a timeout far above the
// default: the stand-in answers at once, but a loaded test machine running
// the package's tests in parallel can take longer than the default's
// fraction of a second to carry the call, and these tests are of what a
// search does with the answer, not of the timeout (the fallback cases set
// their own).
func rerankOptions(url string) options.Options {
	opts := options.Default()
	opts.RerankURL, opts.RerankModel = url, "bge-reranker-v2-m3"
	opts.RerankTimeout = 10 * time.Second
	return opts
}

func titles(hits []*hearthv1.SearchHit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.GetTitle()
	}
	return out
}

// TestSearch_Rerank holds the rerank stage (docs/abstention.md, "Rerank")
// against a llama-server stand-in that speaks /v1/rerank: on, an abstaining
// search comes back in the order of the server's scores, each why saying
// its score and the ranking "fts+rerank"; off (no rerank_url, or a search
// that does not abstain) nothing changes and the server is not asked; down,
// slow or failing, the search silently keeps the unreranked order and says
// "fts".
func TestSearch_Rerank(t *testing.T) {
	t.Parallel()
	db := abstainStore(t)
	plain := rerankSearch(t, db, options.Default(), rerankQuery, true)
	if plain.GetRanking() != "fts" || len(plain.GetHits()) < 3 {
		t.Fatalf("without rerank: ranking %q, %d hits; want fts and at least 3", plain.GetRanking(), len(plain.GetHits()))
	}
	for _, h := range plain.GetHits() {
		if strings.Contains(h.GetWhy(), "rerank") {
			t.Errorf("without rerank: hit %q why %q", h.GetTitle(), h.GetWhy())
		}
	}
	content := map[string]string{}
	for _, r := range abstainRecords {
		content[r[0]] = r[1]
	}
	want := slices.Clone(plain.GetHits())
	slices.SortStableFunc(want, func(a, b *hearthv1.SearchHit) int {
		return cmp.Compare(modeltest.OverlapScore(rerankQuery, b.GetTitle()+"\n"+content[b.GetTitle()]),
			modeltest.OverlapScore(rerankQuery, a.GetTitle()+"\n"+content[a.GetTitle()]))
	})
	if slices.Equal(titles(want), titles(plain.GetHits())) {
		t.Fatalf("the stand-in's order is full text's (%q): the case tests nothing", titles(want))
	}

	t.Run("On", func(t *testing.T) {
		t.Parallel()
		ms := modeltest.New(t, modeltest.LlamaServer, modeltest.Model{Name: "bge-reranker-v2-m3"})
		got := rerankSearch(t, db, rerankOptions(ms.URL), rerankQuery, true)
		if got.GetRanking() != "fts+rerank" {
			t.Errorf("ranking %q, want fts+rerank", got.GetRanking())
		}
		if !slices.Equal(titles(got.GetHits()), titles(want)) {
			t.Errorf("order %q, want the stand-in's %q", titles(got.GetHits()), titles(want))
		}
		for _, h := range got.GetHits() {
			if !strings.HasPrefix(h.GetWhy(), "rerank 0.") || !strings.Contains(h.GetWhy(), ", fts #") {
				t.Errorf("hit %q: why %q, want rerank <score>, fts #<n>, …", h.GetTitle(), h.GetWhy())
			}
		}
		if n := ms.Count(modeltest.RerankPath); n != 1 {
			t.Errorf("%d rerank calls, want 1", n)
		}
	})
	t.Run("OffWithoutAbstain", func(t *testing.T) {
		t.Parallel()
		ms := modeltest.New(t, modeltest.LlamaServer, modeltest.Model{Name: "bge-reranker-v2-m3"})
		got := rerankSearch(t, db, rerankOptions(ms.URL), rerankQuery, false)
		if got.GetRanking() != "fts" || !slices.Equal(titles(got.GetHits()), titles(plain.GetHits())) {
			t.Errorf("ranking %q order %q, want fts and %q", got.GetRanking(), titles(got.GetHits()), titles(plain.GetHits()))
		}
		if n := len(ms.Requests()); n != 0 {
			t.Errorf("%d requests to the rerank server, want none", n)
		}
	})
	for _, tt := range []struct {
		name  string
		fault func(*modeltest.Server)
		// asked: the stand-in receives the call (it is up).
		asked bool
		// timeout is the search's rerank timeout: short only where the
		// case is the timeout (Slow), whose call still reaches the
		// stand-in well within a second on a loaded machine.
		timeout time.Duration
	}{
		{"Down", func(s *modeltest.Server) { s.Down() }, false, 100 * time.Millisecond},
		{"Slow", func(s *modeltest.Server) {
			s.Script(modeltest.Rule{Path: modeltest.RerankPath, Action: modeltest.Action{Delay: 5 * time.Second}})
		}, true, time.Second},
		{"Error", func(s *modeltest.Server) {
			s.Script(modeltest.Rule{Path: modeltest.RerankPath, Action: modeltest.Action{Status: http.StatusInternalServerError}})
		}, true, 10 * time.Second},
		{"Malformed", func(s *modeltest.Server) {
			s.Script(modeltest.Rule{Path: modeltest.RerankPath, Action: modeltest.Action{Body: `{"results":[{"index":0}]}`}})
		}, true, 10 * time.Second},
	} {
		t.Run("Fallback"+tt.name, func(t *testing.T) {
			t.Parallel()
			ms := modeltest.New(t, modeltest.LlamaServer, modeltest.Model{Name: "bge-reranker-v2-m3"})
			tt.fault(ms)
			opts := rerankOptions(ms.URL)
			opts.RerankTimeout = tt.timeout
			got := rerankSearch(t, db, opts, rerankQuery, true)
			if got.GetRanking() != "fts" || !slices.Equal(titles(got.GetHits()), titles(plain.GetHits())) {
				t.Errorf("ranking %q order %q, want fts and %q", got.GetRanking(), titles(got.GetHits()), titles(plain.GetHits()))
			}
			for _, h := range got.GetHits() {
				if strings.Contains(h.GetWhy(), "rerank") {
					t.Errorf("hit %q why %q", h.GetTitle(), h.GetWhy())
				}
			}
			if n := ms.Count(modeltest.RerankPath); tt.asked && n != 1 {
				t.Errorf("%d rerank calls, want 1: the fallback was not tried", n)
			}
		})
	}
}

// TestSearch_RerankAbstain holds the bar on the rerank server's score: a
// prompt whose rare words a record holds clears the coverage bar, but when
// the rerank server answers, its best score under min_coverage abstains;
// with min_coverage 0 nothing abstains.
func TestSearch_RerankAbstain(t *testing.T) {
	t.Parallel()
	db := abstainStore(t)
	const query = "what is it that we should be doing about the outbound retry"
	if hits := rerankSearch(t, db, options.Default(), query, true).GetHits(); len(hits) == 0 {
		t.Fatalf("%q abstained by coverage: the case tests nothing", query)
	}
	ms := modeltest.New(t, modeltest.LlamaServer, modeltest.Model{Name: "bge-reranker-v2-m3"})
	if best := modeltest.OverlapScore(query, abstainRecords[0][0]+"\n"+abstainRecords[0][1]); best >= options.DefaultMinCoverage {
		t.Fatalf("the stand-in scores %q %.2f, over the bar: the case tests nothing", query, best)
	}
	got := rerankSearch(t, db, rerankOptions(ms.URL), query, true)
	if len(got.GetHits()) != 0 || got.GetRanking() != "fts+rerank" {
		t.Errorf("ranking %q, %d hits (%q), want fts+rerank and none", got.GetRanking(), len(got.GetHits()), titles(got.GetHits()))
	}
	opts := rerankOptions(ms.URL)
	opts.MinCoverage = 0
	if got := rerankSearch(t, db, opts, query, true); len(got.GetHits()) == 0 {
		t.Error("min_coverage 0 abstained with rerank")
	}
	answer := rerankSearch(t, db, rerankOptions(ms.URL), "how many times do we retry outbound calls", true)
	if hits := answer.GetHits(); len(hits) == 0 || hits[0].GetTitle() != abstainRecords[0][0] {
		t.Errorf("the answerable prompt got %q, want %q first", titles(hits), abstainRecords[0][0])
	}
}

// BenchmarkSearch_AbstainRerank measures memory_search as the prompt hook
// asks it (abstain, 3 hits) over abstainStore, without and with the rerank
// stage against a stand-in that answers at once: the rerank stage's cost is
// its HTTP round trip and the snippets of 20 candidates. It reports the
// median call (p50-ms) beside the mean.
func BenchmarkSearch_AbstainRerank(b *testing.B) {
	db := abstainStore(b)
	ms := modeltest.New(b, modeltest.LlamaServer, modeltest.Model{Name: "bge-reranker-v2-m3"})
	for _, bb := range []struct {
		name string
		opts options.Options
		want string
	}{{"Off", options.Default(), "fts"}, {"On", rerankOptions(ms.URL), "fts+rerank"}} {
		b.Run(bb.name, func(b *testing.B) {
			srv, err := New(db, Config{Marshal: gateway.MarshalResult, Options: bb.opts})
			if err != nil {
				b.Fatal(err)
			}
			svc := &memoryService{Server: srv}
			req := &hearthv1.SearchRequest{Query: "how many times do we retry outbound calls", Namespace: abstainNS, Limit: 3, Abstain: true}
			took := make([]time.Duration, 0, b.N)
			for b.Loop() {
				start := time.Now()
				got, err := svc.Search(context.Background(), req)
				took = append(took, time.Since(start))
				if err != nil || got.GetRanking() != bb.want {
					b.Fatalf("ranking %q, %v; want %s", got.GetRanking(), err, bb.want)
				}
			}
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)/2])/float64(time.Millisecond), "p50-ms")
		})
	}
}

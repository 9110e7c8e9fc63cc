package rerank_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/hearth-memory/hearth/server/models/modeltest"
	"github.com/hearth-memory/hearth/server/models/wire"
	"github.com/hearth-memory/hearth/server/rerank"
)

func TestScores_Wire(t *testing.T) {
	t.Parallel()
	ms := modeltest.New(t, modeltest.LlamaServer, modeltest.Model{Name: "bge-reranker-v2-m3"})
	r, err := rerank.New(rerank.Config{URL: ms.URL + "/", Model: "bge-reranker-v2-m3"})
	if err != nil {
		t.Fatal(err)
	}
	docs := []string{"nothing shared", "the retry policy", "retry outbound calls"}
	got, err := r.Scores(context.Background(), "retry outbound calls", docs)
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range docs {
		if want := modeltest.OverlapScore("retry outbound calls", d); got[i] != want {
			t.Errorf("document %d: score %v, want %v (in document order)", i, got[i], want)
		}
	}
	reqs := ms.Requests()
	if len(reqs) != 1 || reqs[0].Path != modeltest.RerankPath {
		t.Fatalf("requests %+v, want one POST %s", reqs, modeltest.RerankPath)
	}
	var body struct {
		Model     string   `json:"model"`
		Query     string   `json:"query"`
		Documents []string `json:"documents"`
		TopN      int      `json:"top_n"`
	}
	if err := json.Unmarshal(reqs[0].Body, &body); err != nil || body.Model != "bge-reranker-v2-m3" ||
		body.Query != "retry outbound calls" || len(body.Documents) != 3 || body.TopN != 3 {
		t.Errorf("request body %s (%v)", reqs[0].Body, err)
	}
}

// TestScores_Down: a server that does not answer (refused, or slower than
// the timeout) is left alone for DownFor: calls fail with ErrDown at once,
// without a request, and the first call after DownFor asks again. A server
// that answers an error is not down.
func TestScores_Down(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	now := time.Date(2026, 12, 7, 3, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	ms := modeltest.New(t, modeltest.LlamaServer, modeltest.Model{Name: "m"})
	// A timeout a loaded machine (the race detector, other builds) still
	// answers within: the error status must come back as an answer.
	r, err := rerank.New(rerank.Config{URL: ms.URL, Model: "m", Timeout: 500 * time.Millisecond, DownFor: time.Minute, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ms.Script(modeltest.Rule{Path: modeltest.RerankPath, Times: 1, Action: modeltest.Action{Status: 500}})
	if _, err := r.Scores(ctx, "q", []string{"q"}); !errors.As(err, new(*wire.Error)) || wire.NoAnswer(err) {
		t.Fatalf("error status: %v, want an answered *wire.Error", err)
	}
	ms.Script(modeltest.Rule{Path: modeltest.RerankPath, Times: 1, Action: modeltest.Action{Delay: 5 * time.Second}})
	if _, err := r.Scores(ctx, "q", []string{"q"}); !wire.NoAnswer(err) {
		t.Fatalf("slow server: %v, want no answer", err)
	}
	before := ms.Count(modeltest.RerankPath)
	if _, err := r.Scores(ctx, "q", []string{"q"}); !errors.Is(err, rerank.ErrDown) {
		t.Fatalf("after a timeout: %v, want ErrDown", err)
	}
	if n := ms.Count(modeltest.RerankPath); n != before {
		t.Errorf("a down server got %d requests", n-before)
	}
	mu.Lock()
	now = now.Add(time.Minute)
	mu.Unlock()
	if s, err := r.Scores(ctx, "q", []string{"q"}); err != nil || s[0] != 1 {
		t.Errorf("after DownFor: %v, %v; want score 1", s, err)
	}
}

func TestNew(t *testing.T) {
	t.Parallel()
	r, err := rerank.New(rerank.Config{})
	if err != nil || r.Configured() {
		t.Fatalf("unset: %v, configured %v", err, r.Configured())
	}
	if _, err := r.Scores(context.Background(), "q", []string{"d"}); !errors.Is(err, rerank.ErrNotConfigured) {
		t.Errorf("unset: %v, want ErrNotConfigured", err)
	}
	var none *rerank.Reranker
	if none.Configured() {
		t.Error("a nil Reranker is configured")
	}
	for _, cfg := range []rerank.Config{{URL: "ftp://h", Model: "m"}, {URL: "http://u:p@h", Model: "m"}, {URL: "http://h"}} {
		if _, err := rerank.New(cfg); err == nil {
			t.Errorf("%+v: no error", cfg)
		}
	}
}

func TestDecode(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, in string
		n        int
		want     []float64
	}{
		{"OKOrder", `{"results":[{"index":1,"relevance_score":0.9},{"index":0,"relevance_score":0.1}]}`, 2, []float64{0.1, 0.9}},
		{"OKLogits", `{"results":[{"index":0,"relevance_score":-2},{"index":1,"relevance_score":3.5}]}`, 2,
			[]float64{1 / (1 + math.Exp(2)), 1 / (1 + math.Exp(-3.5))}},
		{"ErrCount", `{"results":[{"index":0,"relevance_score":0.5}]}`, 2, nil},
		{"ErrTwice", `{"results":[{"index":0,"relevance_score":0.5},{"index":0,"relevance_score":0.5}]}`, 2, nil},
		{"ErrIndex", `{"results":[{"index":2,"relevance_score":0.5}]}`, 1, nil},
		{"ErrNoScore", `{"results":[{"index":0}]}`, 1, nil},
		{"ErrNoIndex", `{"results":[{"relevance_score":0.5}]}`, 1, nil},
		{"ErrMalformed", `{"results":`, 1, nil},
	} {
		got, err := rerank.Decode([]byte(tt.in), tt.n)
		if tt.want == nil {
			if err == nil || wire.NoAnswer(err) {
				t.Errorf("%s: %v, %v; want an answered error", tt.name, got, err)
			}
			continue
		}
		if err != nil || len(got) != len(tt.want) {
			t.Fatalf("%s: %v, %v", tt.name, got, err)
		}
		for i := range got {
			if math.Abs(got[i]-tt.want[i]) > 1e-12 {
				t.Errorf("%s: score %d = %v, want %v", tt.name, i, got[i], tt.want[i])
			}
		}
	}
}

// FuzzDecode: any reply either fails or gives n scores from 0 to 1.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"results":[{"index":1,"relevance_score":0.9},{"index":0,"relevance_score":0.1}]}`), 2)
	f.Add([]byte(`{"results":[{"index":0,"relevance_score":-1e308}]}`), 1)
	f.Add([]byte(`{"results":[{"index":0,"relevance_score":1e400}]}`), 1)
	f.Fuzz(func(t *testing.T, b []byte, n int) {
		if n < 0 || n > 64 {
			return
		}
		got, err := rerank.Decode(b, n)
		if err != nil {
			return
		}
		if len(got) != n {
			t.Fatalf("%d scores for %d documents", len(got), n)
		}
		for _, s := range got {
			if !(s >= 0 && s <= 1) {
				t.Fatalf("score %v", s)
			}
		}
	})
}

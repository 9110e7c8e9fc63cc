// Package rerank scores documents against a query with the rerank server of
// rerank_url (docs/abstention.md, "Rerank"): an OpenAI/Jina-style
// POST {rerank_url}/rerank, which llama-server serves as /v1/rerank (give
// rerank_url ending in /v1) and text-embeddings-inference as /rerank. A
// reply's relevance_score is read as a probability from 0 to 1; a reply
// holding any score outside that range is a server's raw logits, and every
// score of it goes through the logistic function, which keeps their order.
// A server that did not answer is down for DownFor: calls return ErrDown at
// once until then, so a down server costs a search nothing.
package rerank

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/hearth-memory/hearth/server/models/wire"
	"github.com/hearth-memory/hearth/server/options"
)

// Defaults for Config.
const (
	DefaultTimeout = options.DefaultRerankTimeout
	DefaultDownFor = 30 * time.Second
)

// maxReply bounds a rerank reply.
const maxReply = 4 << 20

// Errors of the reranker.
var (
	// ErrNotConfigured: rerank_url is unset.
	ErrNotConfigured = errors.New("rerank: no rerank server configured")
	// ErrDown: a recent call found the server not answering.
	ErrDown = errors.New("rerank: down")
)

// Config configures a Reranker.
type Config struct {
	// URL is rerank_url ("" means unset); Model is rerank_model.
	URL, Model string
	// Timeout bounds one call (rerank_timeout_s); 0 means DefaultTimeout.
	Timeout time.Duration
	// DownFor is how long a server that did not answer is left alone; 0
	// means DefaultDownFor.
	DownFor time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Transport carries the requests; nil means wire.NewTransport().
	Transport http.RoundTripper
}

// FromOptions returns the Config of Hearth's options.
func FromOptions(o options.Options) Config {
	return Config{URL: o.RerankURL, Model: o.RerankModel, Timeout: o.RerankTimeout}
}

// Reranker scores documents. It is safe for concurrent use.
type Reranker struct {
	url, model string
	timeout    time.Duration
	downFor    time.Duration
	now        func() time.Time
	hc         *http.Client

	mu        sync.Mutex
	downUntil time.Time
}

// New returns a Reranker for cfg; with cfg.URL "" one whose Configured is
// false. It fails when the URL is not absolute http(s) or the model is
// missing.
func New(cfg Config) (*Reranker, error) {
	r := &Reranker{url: strings.TrimRight(cfg.URL, "/"), model: cfg.Model, timeout: cfg.Timeout,
		downFor: cfg.DownFor, now: cfg.Now}
	if r.timeout <= 0 {
		r.timeout = DefaultTimeout
	}
	if r.downFor <= 0 {
		r.downFor = DefaultDownFor
	}
	if r.now == nil {
		r.now = time.Now
	}
	rt := cfg.Transport
	if rt == nil {
		rt = wire.NewTransport()
	}
	r.hc = &http.Client{Transport: rt}
	if r.url == "" {
		return r, nil
	}
	if u, err := url.Parse(r.url); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
		u.User != nil || strings.ContainsAny(r.url, "?#") {
		return nil, errors.New("rerank: rerank_url: want an absolute http or https URL")
	}
	if r.model == "" {
		return nil, errors.New("rerank: rerank_model is empty")
	}
	return r, nil
}

// Configured reports whether rerank_url is set; false for a nil Reranker.
func (r *Reranker) Configured() bool { return r != nil && r.url != "" }

// Scores returns each document's relevance to query, 0 to 1, in the order
// of docs, bounded by Timeout. Any failure is an error: ErrNotConfigured,
// ErrDown (at once, while a recent call found the server not answering),
// or the *wire.Error of the call; a server that did not answer (refused,
// timed out) is down for DownFor.
func (r *Reranker) Scores(ctx context.Context, query string, docs []string) ([]float64, error) {
	if !r.Configured() {
		return nil, ErrNotConfigured
	}
	if len(docs) == 0 {
		return nil, nil
	}
	r.mu.Lock()
	down := r.now().Before(r.downUntil)
	r.mu.Unlock()
	if down {
		return nil, ErrDown
	}
	cctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	scores, err := r.request(cctx, query, docs)
	if err != nil && wire.NoAnswer(err) && ctx.Err() == nil {
		r.mu.Lock()
		r.downUntil = r.now().Add(r.downFor)
		r.mu.Unlock()
	}
	return scores, err
}

func (r *Reranker) request(ctx context.Context, query string, docs []string) ([]float64, error) {
	body, err := wire.Marshal(struct {
		Model     string   `json:"model"`
		Query     string   `json:"query"`
		Documents []string `json:"documents"`
		TopN      int      `json:"top_n"`
	}{r.model, query, docs, len(docs)})
	if err != nil {
		return nil, err
	}
	b, err := wire.Do(ctx, r.hc, r.url+"/rerank", body, maxReply)
	if err != nil {
		return nil, err
	}
	return Decode(b, len(docs))
}

// Decode reads a rerank reply, {"results":[{"index":i,"relevance_score":s},
// …]}, for n documents: every document scored once, at its index, with a
// finite score; the scores are returned in document order, 0 to 1 (the
// logistic function of each when any lies outside 0 to 1).
func Decode(b []byte, n int) ([]float64, error) {
	var resp struct {
		Results []struct {
			Index *int     `json:"index"`
			Score *float64 `json:"relevance_score"`
		} `json:"results"`
	}
	if err := json.Unmarshal(b, &resp); err != nil {
		return nil, wire.Bad("malformed reply")
	}
	if len(resp.Results) != n {
		return nil, wire.Bad("%d scores for %d documents", len(resp.Results), n)
	}
	out := make([]float64, n)
	seen := make([]bool, n)
	logits := false
	for _, res := range resp.Results {
		if res.Index == nil || res.Score == nil {
			return nil, wire.Bad("a result without index or relevance_score")
		}
		i, s := *res.Index, *res.Score
		if i < 0 || i >= n || seen[i] {
			return nil, wire.Bad("score index %d out of place", i)
		}
		if math.IsNaN(s) || math.IsInf(s, 0) {
			return nil, wire.Bad("score %d is not finite", i)
		}
		seen[i], out[i] = true, s
		logits = logits || s < 0 || s > 1
	}
	if logits {
		for i, s := range out {
			out[i] = 1 / (1 + math.Exp(-s))
		}
	}
	return out, nil
}

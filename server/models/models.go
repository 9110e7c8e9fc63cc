// Package models routes Hearth's chat calls to the model servers on the
// LAN (docs/design.md R-M1–R-M7): Ollama's native API, or the OpenAI-style API of
// llama-server and llama-swap when the URL ends in /v1, each with thinking
// off and the reply held to a JSON schema, checked again on arrival.
//
// A Router knows the servers in two tiers — ollama_url and
// ollama_fallback_url first, ollama_direct_urls only while neither of those
// is live — and per-kind model chains. Probes run only from Poll, which
// the worker calls; a call picks the live server with the fewest calls in
// flight, walks the kind's chain on it when a model fails, and moves to the
// next server when the server does not answer. Fence and System build
// prompts that keep stored text as data.
package models

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hearth-memory/hearth/server/models/wire"
	"github.com/hearth-memory/hearth/server/options"
)

// Kind is the task a call serves; each kind has its own model chain.
type Kind string

// The three kinds of ollama_models.
const (
	Extraction Kind = "extraction"
	Review     Kind = "review"
	Answer     Kind = "answer"
)

// Tier is a server's place in the order of docs/design.md R-M5.
type Tier string

// Primary is ollama_url, Fallback ollama_fallback_url (same tier, after
// Primary on a tie), Direct an entry of ollama_direct_urls.
const (
	Primary  Tier = "primary"
	Fallback Tier = "fallback"
	Direct   Tier = "direct"
)

// Defaults for Config.
const (
	DefaultProbeEvery   = 15 * time.Second
	DefaultProbeTimeout = 5 * time.Second
	DefaultTimeout      = 120 * time.Second
)

// Errors a Call returns.
var (
	// ErrNotConfigured: no model server is configured (zero-model default).
	ErrNotConfigured = errors.New("models: no model server configured")
	// ErrUnavailable: no live server could give a valid reply; the error
	// wraps each attempt's *AttemptError.
	ErrUnavailable = errors.New("models: no model server gave a valid reply")
	// ErrInvalid: the Request is incomplete.
	ErrInvalid = errors.New("models: invalid request")
)

// Config configures a Router.
type Config struct {
	// URL, FallbackURL and DirectURLs are ollama_url, ollama_fallback_url
	// and ollama_direct_urls; "" and empty mean unset. A URL that repeats
	// an earlier one is ignored.
	URL, FallbackURL string
	DirectURLs       []string
	// Model is ollama_model; Chains are ollama_models. An empty chain means
	// Model alone.
	Model  string
	Chains map[Kind][]string
	// Timeout bounds each request to a server (ollama_timeout_s); 0 means
	// DefaultTimeout.
	Timeout time.Duration
	// ProbeEvery is how old a probe may get before Poll probes again; 0
	// means DefaultProbeEvery. ProbeTimeout bounds one probe; 0 means
	// DefaultProbeTimeout.
	ProbeEvery, ProbeTimeout time.Duration
	// Now is the clock Poll reads; nil means time.Now.
	Now func() time.Time
	// Transport carries the requests; nil means wire.NewTransport().
	Transport http.RoundTripper
	// Budget is each server's daily cap (model_daily_calls,
	// model_daily_tokens); zero fields mean no cap. Location is the time
	// zone whose midnight starts a new budget day; nil means time.Local.
	Budget   Budget
	Location *time.Location
	// Ledger keeps the day's usage and the pause across restarts; nil keeps
	// them in memory. OnLedgerError hears of a usage the ledger failed to
	// keep (the call was counted in memory all the same).
	Ledger        Ledger
	OnLedgerError func(error)
}

// FromOptions returns the Config of Hearth's options.
func FromOptions(o options.Options) Config {
	return Config{
		URL: o.OllamaURL, FallbackURL: o.OllamaFallbackURL, DirectURLs: o.OllamaDirectURLs,
		Model: o.OllamaModel,
		Chains: map[Kind][]string{
			Extraction: o.OllamaModels.Extraction, Review: o.OllamaModels.Review, Answer: o.OllamaModels.Answer,
		},
		Timeout: o.OllamaTimeout,
		Budget:  Budget{Calls: int64(o.ModelDailyCalls), Tokens: int64(o.ModelDailyTokens)},
	}
}

// Request is one chat call.
type Request struct {
	// Kind picks the model chain.
	Kind Kind
	// System is the system message (build it with System); User the user
	// message, with stored text inside Fence.
	System, User string
	// Schema is what the reply must satisfy; required.
	Schema *Schema
	// Model, when set, is the one model the call tries instead of the
	// kind's chain (an extraction rerun with another model).
	Model string
	// MaxTokens caps the reply (num_predict, max_tokens); 0 leaves the
	// server's default. ContextTokens sets Ollama's num_ctx; 0 leaves the
	// server's default.
	MaxTokens, ContextTokens int
}

// Reply is a valid answer.
type Reply struct {
	// Server is the base URL of the server that answered, Model the model
	// of the chain it answered with.
	Server, Model string
	// Content is the reply, one JSON value that satisfies the schema.
	Content json.RawMessage
}

// AttemptError is one failed attempt of a Call: a model on a server.
type AttemptError struct {
	Server, Model string
	// Err is a *wire.Error (the server did not answer, answered with an
	// HTTP error, or sent an unusable body) or a schema failure.
	Err error
	// Reply is the content the model sent when it did not fit the schema
	// (or the result); nil when there was none.
	Reply []byte
}

func (e *AttemptError) Error() string {
	return fmt.Sprintf("%s model %s: %v", e.Server, e.Model, e.Err)
}

func (e *AttemptError) Unwrap() error { return e.Err }

// Router sends chat calls to the configured servers. It is safe for
// concurrent use.
type Router struct {
	servers      []*server
	chains       map[Kind][]string
	timeout      time.Duration
	probeEvery   time.Duration
	probeTimeout time.Duration
	now          func() time.Time
	budget       Budget
	loc          *time.Location
	ledger       Ledger
	// onLedgerError is Config.OnLedgerError.
	onLedgerError func(error)

	mu     sync.Mutex // guards the mutable fields of every server, day and paused
	day    string     // the budget day the servers' today counts
	paused bool
}

// server is one configured model server; the fields after c are guarded
// by Router.mu.
type server struct {
	url  string
	tier Tier
	c    client

	inFlight   int
	calls      int64
	failures   map[string]int64
	live       bool // a server not yet probed counts as live
	probed     bool
	probing    bool
	lastProbe  time.Time
	probeError string
	models     []string
	// today is what calls spent on the budget day; total since the start.
	today, total Usage
}

// New returns a Router for cfg. With no URL configured it returns a Router
// whose Configured is false and whose calls fail with ErrNotConfigured. It
// fails when a URL is not absolute http(s) or a chain is empty.
func New(cfg Config) (*Router, error) {
	r := &Router{
		chains: map[Kind][]string{}, timeout: cfg.Timeout, probeEvery: cfg.ProbeEvery,
		probeTimeout: cfg.ProbeTimeout, now: cfg.Now, budget: cfg.Budget, loc: cfg.Location,
		ledger: cfg.Ledger, onLedgerError: cfg.OnLedgerError,
	}
	if r.loc == nil {
		r.loc = time.Local
	}
	if r.timeout <= 0 {
		r.timeout = DefaultTimeout
	}
	if r.probeEvery <= 0 {
		r.probeEvery = DefaultProbeEvery
	}
	if r.probeTimeout <= 0 {
		r.probeTimeout = DefaultProbeTimeout
	}
	if r.now == nil {
		r.now = time.Now
	}
	rt := cfg.Transport
	if rt == nil {
		rt = wire.NewTransport()
	}
	hc := &http.Client{Transport: rt}
	add := func(u string, t Tier) error {
		u = strings.TrimRight(u, "/")
		if u == "" {
			return nil
		}
		if !checkURL(u) {
			return fmt.Errorf("models: server URL %q: want an absolute http or https URL", u)
		}
		for _, s := range r.servers {
			if s.url == u {
				return nil
			}
		}
		r.servers = append(r.servers, &server{url: u, tier: t, c: newClient(u, hc), live: true, failures: map[string]int64{}})
		return nil
	}
	if err := add(cfg.URL, Primary); err != nil {
		return nil, err
	}
	if err := add(cfg.FallbackURL, Fallback); err != nil {
		return nil, err
	}
	for _, u := range cfg.DirectURLs {
		if err := add(u, Direct); err != nil {
			return nil, err
		}
	}
	for _, k := range []Kind{Extraction, Review, Answer} {
		chain := slices.DeleteFunc(slices.Clone(cfg.Chains[k]), func(m string) bool { return m == "" })
		if len(chain) == 0 {
			chain = []string{cfg.Model}
		}
		if chain[0] == "" {
			if len(r.servers) > 0 {
				return nil, fmt.Errorf("models: no model for %s: set ollama_model or ollama_models.%s", k, k)
			}
			chain = nil
		}
		r.chains[k] = chain
	}
	return r, nil
}

// Configured reports whether any model server is configured.
func (r *Router) Configured() bool { return len(r.servers) > 0 }

// Chain returns the model chain of kind k.
func (r *Router) Chain(k Kind) []string { return slices.Clone(r.chains[k]) }

// Call sends req to the chosen server and model and returns the first
// valid reply, unmarshalled into out too when out is not nil.
//
// The server is the live one with the fewest calls in flight, the earlier
// configured on a tie; direct servers only while neither primary is live.
// An answer that is an HTTP error, malformed, or breaks the schema fails
// that model: the next model of the kind's chain is tried on the same
// server, then the next server. A server that does not answer within the
// timeout (or refuses the connection) is marked down until its next probe,
// and the call moves on to the next server. Every failed attempt is
// counted against its server and model.
//
// Every request sent to a server is one call of its daily budget, with the
// tokens its reply reports (or Estimate's); a server that spent its cap is
// passed over like a down one until the next day or Resume, and while
// calls are paused none is sent. This is the one place the budget is
// checked: every model call of Hearth goes through Call.
//
// Returns ErrNotConfigured with no server, ErrInvalid for a request without
// a kind chain or schema, ctx's error when ctx ends, and otherwise an error
// wrapping ErrUnavailable and every attempt's *AttemptError; it wraps
// ErrBudget too when the budget or the pause kept a server from being
// tried.
func (r *Router) Call(ctx context.Context, req Request, out any) (Reply, error) {
	if !r.Configured() {
		return Reply{}, ErrNotConfigured
	}
	chain := r.chains[req.Kind]
	if len(chain) == 0 {
		return Reply{}, fmt.Errorf("%w: unknown kind %q", ErrInvalid, req.Kind)
	}
	if req.Model != "" {
		chain = []string{req.Model}
	}
	if req.Schema == nil {
		return Reply{}, fmt.Errorf("%w: no schema", ErrInvalid)
	}
	tried := make([]bool, len(r.servers))
	var errs []error
	blocked := false
	for {
		i, spent := r.acquire(tried)
		blocked = blocked || spent
		if i < 0 {
			break
		}
		tried[i] = true
		s := r.servers[i]
		for _, model := range chain {
			if !r.take(s) {
				blocked = true
				break
			}
			content, err := r.attempt(ctx, s, model, &req)
			if err == nil {
				if out != nil {
					if err = json.Unmarshal(content, out); err != nil {
						err = wire.Bad("reply does not fit the result: %v", err)
					}
				}
			}
			if err == nil {
				r.release(s)
				return Reply{Server: s.url, Model: model, Content: content}, nil
			}
			if ctx.Err() != nil {
				r.release(s)
				return Reply{}, ctx.Err()
			}
			down := wire.NoAnswer(err)
			errs = append(errs, &AttemptError{Server: s.url, Model: model, Err: err, Reply: content})
			r.fail(s, model, down)
			if down {
				break
			}
		}
		r.release(s)
	}
	if blocked {
		errs = append(errs, ErrBudget)
	}
	if len(errs) == 0 {
		return Reply{}, fmt.Errorf("%w: no live server", ErrUnavailable)
	}
	return Reply{}, fmt.Errorf("%w: %w", ErrUnavailable, errors.Join(errs...))
}

// attempt sends req to model on s, bounded by the timeout, charges its
// tokens to s, and checks the reply against the schema.
func (r *Router) attempt(ctx context.Context, s *server, model string, req *Request) (json.RawMessage, error) {
	actx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	content, u, err := s.c.chat(actx, model, req)
	if err == nil && u.Tokens() == 0 {
		u = Estimate(req, content)
	}
	r.charge(ctx, s, u)
	if err != nil {
		return nil, err
	}
	content = bytes.TrimSpace(content)
	if err := req.Schema.Check(content); err != nil {
		return content, wire.Bad("%v", err)
	}
	return content, nil
}

// acquire chooses the server for the next attempt among those not yet
// tried, counts the call in flight on it, and returns its index; -1 when
// there is none. spent reports that the budget kept a live server out: it
// spent its cap, or calls are paused. A primary that spent its cap counts
// as not live, so direct servers take over as they do for a down one.
func (r *Router) acquire(tried []bool) (best int, spent bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rollLocked()
	if r.paused {
		return -1, r.liveLocked(false) > 0
	}
	primaryLive := r.primaryLiveLocked(true)
	best = -1
	for i, s := range r.servers {
		if tried[i] || !s.live || (s.tier == Direct && primaryLive) {
			continue
		}
		if r.spentLocked(s) {
			spent = true
			continue
		}
		if best < 0 || s.inFlight < r.servers[best].inFlight {
			best = i
		}
	}
	if best >= 0 {
		s := r.servers[best]
		s.inFlight++
		s.calls++
	}
	return best, spent
}

// primaryLiveLocked reports whether a primary or fallback server is live
// (with budget left, when withBudget). r.mu is held.
func (r *Router) primaryLiveLocked(withBudget bool) bool {
	for _, s := range r.servers {
		if s.tier != Direct && s.live && !(withBudget && r.spentLocked(s)) {
			return true
		}
	}
	return false
}

// fail counts a failed attempt of model on s; down marks s down until its
// next probe.
func (r *Router) fail(s *server, model string, down bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s.failures[model]++
	if down {
		s.live = false
	}
}

// release ends a call in flight on s.
func (r *Router) release(s *server) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s.inFlight--
}

// Poll probes every server whose last probe is ProbeEvery old or that was
// never probed, all at once, and returns when they are done (each bounded
// by ProbeTimeout). A server is live when its probe returns its model list;
// an unanswered or failed probe makes it down until the next probe. The
// worker calls Poll on its idle loop, at least every 15 s; calls never
// probe. When ctx ends, probes that were cut off change nothing.
func (r *Router) Poll(ctx context.Context) {
	now := r.now()
	var due []*server
	r.mu.Lock()
	for _, s := range r.servers {
		if !s.probing && (!s.probed || now.Sub(s.lastProbe) >= r.probeEvery) {
			s.probing = true
			due = append(due, s)
		}
	}
	r.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range due {
		wg.Go(func() {
			pctx, cancel := context.WithTimeout(ctx, r.probeTimeout)
			defer cancel()
			models, err := s.c.probe(pctx)
			r.mu.Lock()
			defer r.mu.Unlock()
			s.probing = false
			if ctx.Err() != nil {
				return
			}
			s.probed = true
			s.lastProbe = now
			s.live = err == nil
			s.probeError = ""
			if err != nil {
				s.probeError = err.Error()
				return
			}
			s.models = models
		})
	}
	wg.Wait()
}

// LiveCount returns how many servers calls may go to now: the live ones of
// the first tier, or the live direct servers while neither primary is live.
// The nightly review runs max(2, LiveCount()) workers.
func (r *Router) LiveCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.liveLocked(false)
}

// liveLocked counts the servers calls may go to as LiveCount does; with
// withBudget, a server that spent its cap counts as down. r.mu is held.
func (r *Router) liveLocked(withBudget bool) int {
	first, direct := 0, 0
	for _, s := range r.servers {
		if !s.live || (withBudget && r.spentLocked(s)) {
			continue
		}
		if s.tier == Direct {
			direct++
		} else {
			first++
		}
	}
	if first > 0 {
		return first
	}
	return direct
}

// Status is a snapshot of the servers for memory_status and the page.
type Status struct {
	// Servers in configured order: ollama_url, ollama_fallback_url, then
	// ollama_direct_urls.
	Servers []ServerStatus
}

// ServerStatus is one server's state.
type ServerStatus struct {
	URL string
	// Format is "ollama" or "openai".
	Format string
	Tier   Tier
	// Live is whether calls may go to it (a server not yet probed counts as
	// live); Probed whether it was ever probed.
	Live, Probed bool
	// LastProbe is when the last probe started (zero before the first);
	// ProbeError why it failed ("" when it answered).
	LastProbe  time.Time
	ProbeError string
	// Models is what the last answered probe listed.
	Models []string
	// InFlight is the calls on it now; Calls every call routed to it.
	InFlight int
	Calls    int64
	// Failures counts failed attempts by model, sorted by model.
	Failures []ModelFailures
	// Today is what calls spent on the budget day; Total since the start.
	// Spent is whether it reached its daily cap.
	Today, Total Usage
	Spent        bool
}

// ModelFailures is how often one model failed on one server.
type ModelFailures struct {
	Model string
	Count int64
}

// Status returns a snapshot of every server.
func (r *Router) Status() Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rollLocked()
	st := Status{Servers: make([]ServerStatus, 0, len(r.servers))}
	for _, s := range r.servers {
		ss := ServerStatus{
			URL: s.url, Format: wire.FormatOf(s.url).String(), Tier: s.tier, Live: s.live, Probed: s.probed,
			LastProbe: s.lastProbe, ProbeError: s.probeError, Models: slices.Clone(s.models),
			InFlight: s.inFlight, Calls: s.calls, Today: s.today, Total: s.total, Spent: r.spentLocked(s),
		}
		for m, n := range s.failures {
			ss.Failures = append(ss.Failures, ModelFailures{Model: m, Count: n})
		}
		slices.SortFunc(ss.Failures, func(a, b ModelFailures) int {
			if a.Model < b.Model {
				return -1
			}
			if a.Model > b.Model {
				return 1
			}
			return 0
		})
		st.Servers = append(st.Servers, ss)
	}
	return st
}

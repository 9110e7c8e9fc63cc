// Package encoder turns text into unit vectors with the embedding server of
// embed_url (docs/design.md R-M8–R-M10): OpenAI-style POST /v1/embeddings when the
// URL ends in /v1 (llama-server, llama-swap), Ollama's POST /api/embed
// otherwise. Queries carry Qwen3-Embedding's instruction, records are
// title and content; vectors are L2-normalised on arrival and a reply with
// a wrong dimension or a non-finite value is a failed call. Each batch
// learns the model snapshot its vectors belong to, and Digest keys a stored
// vector to model, snapshot and text, so a change of any makes it stale.
package encoder

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/hearth-memory/hearth/server/models/wire"
	"github.com/hearth-memory/hearth/server/options"
)

// QueryInstruction is prepended to a search query, exactly as
// Qwen3-Embedding's reference code builds queries (no space after Query:).
const QueryInstruction = "Instruct: Given a web search query, retrieve relevant passages that answer the query\nQuery:"

// QueryText returns the text embedded for a search query.
func QueryText(query string) string { return QueryInstruction + query }

// RecordText returns the text embedded for a record: no instruction.
func RecordText(title, content string) string { return title + "\n" + content }

// Digest returns the hex SHA-256 that keys a stored vector: model,
// snapshot and text, each length-prefixed so no two triples collide.
func Digest(model, snapshot, text string) string {
	h := sha256.New()
	var n [8]byte
	for _, s := range []string{model, snapshot, text} {
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Defaults for Config.
const (
	DefaultTimeout      = 2 * time.Second
	DefaultBatchTimeout = 120 * time.Second
	DefaultMaxBatch     = 32
	DefaultProbeEvery   = 30 * time.Second
	DefaultProbeTimeout = 5 * time.Second
)

// Errors of the encoder.
var (
	// ErrNotConfigured: embed_url is unset (full-text search only).
	ErrNotConfigured = errors.New("encoder: no encoder configured")
	// ErrDown: the last probe or call found the encoder not answering.
	ErrDown = errors.New("encoder: down")
	// ErrSnapshotChanged: the model snapshot changed while a batch was
	// embedded, so its vectors belong to neither; embed them again.
	ErrSnapshotChanged = errors.New("encoder: model snapshot changed during the batch")
)

// Config configures an Encoder.
type Config struct {
	// URL is embed_url ("" means unset); Model is embed_model.
	URL, Model string
	// Timeout bounds a query embedding (embed_timeout_s); 0 means
	// DefaultTimeout. BatchTimeout bounds each request of a batch and each
	// snapshot read, which may wait for a cold model load; 0 means
	// DefaultBatchTimeout.
	Timeout, BatchTimeout time.Duration
	// MaxBatch is how many texts go in one request; 0 means
	// DefaultMaxBatch.
	MaxBatch int
	// Dim is the dimension every vector must have; 0 takes the dimension
	// of the first reply after each snapshot change and holds to it.
	Dim int
	// ProbeEvery is how old a probe may get before Poll probes again; 0
	// means DefaultProbeEvery. ProbeTimeout bounds a probe; 0 means
	// DefaultProbeTimeout.
	ProbeEvery, ProbeTimeout time.Duration
	// Now is the clock Poll reads; nil means time.Now.
	Now func() time.Time
	// Transport carries the requests; nil means wire.NewTransport().
	Transport http.RoundTripper
}

// FromOptions returns the Config of Hearth's options.
func FromOptions(o options.Options) Config {
	return Config{URL: o.EmbedURL, Model: o.EmbedModel, Timeout: o.EmbedTimeout}
}

// Vector is one embedded query.
type Vector struct {
	// Model and Snapshot are what the vector belongs to; Snapshot is the
	// one the last batch read ("" before any batch).
	Model, Snapshot string
	// Values has unit length.
	Values []float32
}

// Batch is the vectors of a batch of texts, in the order of the texts.
type Batch struct {
	// Model and Snapshot key the vectors (Digest).
	Model, Snapshot string
	// Vectors have unit length.
	Vectors [][]float32
}

// Encoder embeds text. It is safe for concurrent use.
type Encoder struct {
	url      string
	format   wire.Format
	model    string
	hc       *http.Client
	timeout  time.Duration
	batchTO  time.Duration
	maxBatch int
	fixedDim int
	every    time.Duration
	probeTO  time.Duration
	now      func() time.Time

	mu         sync.Mutex
	live       bool
	probed     bool
	probing    bool
	lastProbe  time.Time
	probeError string
	snapshot   string
	dim        int
	swap       bool // the server is llama-swap: the snapshot comes from /upstream
	calls      int64
	failures   int64
	lastError  string
}

// New returns an Encoder for cfg; with cfg.URL "" one whose Configured is
// false and whose calls fail with ErrNotConfigured. It fails when the URL
// is not absolute http(s) or the model is missing.
func New(cfg Config) (*Encoder, error) {
	e := &Encoder{
		url: strings.TrimRight(cfg.URL, "/"), model: cfg.Model, timeout: cfg.Timeout, batchTO: cfg.BatchTimeout,
		maxBatch: cfg.MaxBatch, fixedDim: cfg.Dim, every: cfg.ProbeEvery, probeTO: cfg.ProbeTimeout, now: cfg.Now,
	}
	e.format = wire.FormatOf(e.url)
	if e.timeout <= 0 {
		e.timeout = DefaultTimeout
	}
	if e.batchTO <= 0 {
		e.batchTO = DefaultBatchTimeout
	}
	if e.maxBatch <= 0 {
		e.maxBatch = DefaultMaxBatch
	}
	if e.every <= 0 {
		e.every = DefaultProbeEvery
	}
	if e.probeTO <= 0 {
		e.probeTO = DefaultProbeTimeout
	}
	if e.now == nil {
		e.now = time.Now
	}
	if cfg.Dim < 0 {
		return nil, fmt.Errorf("encoder: dimension %d: want 0 or more", cfg.Dim)
	}
	rt := cfg.Transport
	if rt == nil {
		rt = wire.NewTransport()
	}
	e.hc = &http.Client{Transport: rt}
	if e.url == "" {
		return e, nil
	}
	if !checkURL(e.url) {
		return nil, fmt.Errorf("encoder: embed_url %q: want an absolute http or https URL", cfg.URL)
	}
	if e.model == "" {
		return nil, errors.New("encoder: embed_model is empty")
	}
	return e, nil
}

// Configured reports whether embed_url is set.
func (e *Encoder) Configured() bool { return e.url != "" }

// Model returns embed_model.
func (e *Encoder) Model() string { return e.model }

// Live reports whether the encoder answered its last probe and no call has
// found it not answering since. Before its first probe it is not live.
func (e *Encoder) Live() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.live
}

// Snapshot returns the model snapshot the last batch or ReadSnapshot read;
// "" before any.
func (e *Encoder) Snapshot() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.snapshot
}

// Poll probes the encoder when its last probe is ProbeEvery old or it was
// never probed, and returns when the probe is done (bounded by
// ProbeTimeout). The probe only asks for the model list (/v1/models or
// /api/tags), which loads no model. When ctx ends, a probe cut off changes
// nothing.
func (e *Encoder) Poll(ctx context.Context) {
	if !e.Configured() {
		return
	}
	now := e.now()
	e.mu.Lock()
	if e.probing || (e.probed && now.Sub(e.lastProbe) < e.every) {
		e.mu.Unlock()
		return
	}
	e.probing = true
	e.mu.Unlock()

	pctx, cancel := context.WithTimeout(ctx, e.probeTO)
	defer cancel()
	err := e.probe(pctx)

	e.mu.Lock()
	defer e.mu.Unlock()
	e.probing = false
	if ctx.Err() != nil {
		return
	}
	e.probed = true
	e.lastProbe = now
	e.live = err == nil
	e.probeError = ""
	if err != nil {
		e.probeError = err.Error()
	}
}

// Query embeds a search query (QueryText(query)), bounded by Timeout. It
// does not wait for a down encoder: it returns ErrDown at once.
func (e *Encoder) Query(ctx context.Context, query string) (Vector, error) {
	if !e.Configured() {
		return Vector{}, ErrNotConfigured
	}
	if !e.Live() {
		return Vector{}, ErrDown
	}
	qctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	e.mu.Lock()
	snapshot, dim := e.snapshot, e.wantDim()
	e.mu.Unlock()
	vecs, err := e.request(qctx, []string{QueryText(query)}, dim)
	if err = e.account(ctx, err); err != nil {
		return Vector{}, err
	}
	return Vector{Model: e.model, Snapshot: snapshot, Values: vecs[0]}, nil
}

// Embed embeds texts (RecordText of each record) in requests of MaxBatch,
// each bounded by BatchTimeout, and reads the model snapshot before and
// after (R-M9), failing with ErrSnapshotChanged when they differ. Like
// Query it returns ErrDown at once while the encoder is not live (before
// its first probe too): the next answered probe brings it back.
func (e *Encoder) Embed(ctx context.Context, texts []string) (Batch, error) {
	if !e.Configured() {
		return Batch{}, ErrNotConfigured
	}
	if !e.Live() {
		return Batch{}, ErrDown
	}
	before, err := e.readSnapshot(ctx)
	if err = e.account(ctx, err); err != nil {
		return Batch{}, err
	}
	e.mu.Lock()
	e.keepSnapshot(before)
	dim := e.wantDim()
	e.mu.Unlock()

	out := make([][]float32, 0, len(texts))
	for start := 0; start < len(texts); start += e.maxBatch {
		chunk := texts[start:min(start+e.maxBatch, len(texts))]
		bctx, cancel := context.WithTimeout(ctx, e.batchTO)
		vecs, err := e.request(bctx, chunk, dim)
		cancel()
		if err = e.account(ctx, err); err != nil {
			return Batch{}, err
		}
		if dim == 0 && len(vecs) > 0 {
			dim = len(vecs[0])
		}
		out = append(out, vecs...)
	}

	after := before
	if len(texts) > 0 {
		after, err = e.readSnapshot(ctx)
		if err = e.account(ctx, err); err != nil {
			return Batch{}, err
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if after != before {
		e.snapshot, e.dim = after, 0
		e.failures++
		e.lastError = ErrSnapshotChanged.Error()
		return Batch{}, ErrSnapshotChanged
	}
	if e.dim == 0 {
		e.dim = dim
	}
	return Batch{Model: e.model, Snapshot: before, Vectors: out}, nil
}

// keepSnapshot makes s the snapshot the encoder's vectors are of; a new
// one's replies may have another dimension. e.mu held.
func (e *Encoder) keepSnapshot(s string) {
	if s != e.snapshot {
		e.snapshot, e.dim = s, 0
	}
}

// wantDim is the dimension replies must have; 0 for any. e.mu held.
func (e *Encoder) wantDim() int {
	if e.fixedDim > 0 {
		return e.fixedDim
	}
	return e.dim
}

// account counts a request and its failure; a server that did not answer
// is down until the next probe. It returns err, or ctx's error when the
// caller gave up.
func (e *Encoder) account(ctx context.Context, err error) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.calls++
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	e.failures++
	e.lastError = err.Error()
	if wire.NoAnswer(err) {
		e.live = false
	}
	return err
}

// Status is a snapshot of the encoder for memory_status and the page.
type Status struct {
	Configured bool
	URL, Model string
	// Format is "ollama" or "openai".
	Format string
	// Live as Live; Probed whether it was ever probed; LastProbe when the
	// last probe started; ProbeError why it failed.
	Live, Probed bool
	LastProbe    time.Time
	ProbeError   string
	// Snapshot and Dim are what the last batch found ("" and 0 before).
	Snapshot string
	Dim      int
	// Calls counts requests (embeddings and snapshot reads), Failures the
	// failed ones, LastError the last failure.
	Calls, Failures int64
	LastError       string
}

// Status returns the encoder's state.
func (e *Encoder) Status() Status {
	e.mu.Lock()
	defer e.mu.Unlock()
	return Status{
		Configured: e.Configured(), URL: e.url, Model: e.model, Format: e.format.String(),
		Live: e.live, Probed: e.probed, LastProbe: e.lastProbe, ProbeError: e.probeError,
		Snapshot: e.snapshot, Dim: e.wantDim(), Calls: e.calls, Failures: e.failures, LastError: e.lastError,
	}
}

// Package modeltest runs model servers for tests: Ollama, llama-server,
// llama-swap and a vLLM-style server, each speaking its real wire format
// over TCP on 127.0.0.1:0 with the shapes, statuses and error bodies of
// shared/MODELS.md, so the real chat and embedding clients run against
// them. llama-server (and vLLM) also serve /v1/rerank, scoring each
// document by its share of the query's words (OverlapScore). A test
// scripts faults per path and model (slow, hang, error status, malformed or
// schema-violating body, a chosen reply), takes the server down (connection
// refused) and up again, and asserts on the log of every request the server
// received.
package modeltest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hearth-memory/hearth/storage/testwait"
)

// Flavor is the kind of server a Server imitates.
type Flavor int

const (
	// Ollama serves /api/tags, /api/chat and /api/embed; its URL has no /v1.
	Ollama Flavor = iota
	// LlamaServer is llama.cpp's llama-server with one model: /v1/models,
	// /v1/chat/completions, /v1/embeddings, /health.
	LlamaServer
	// LlamaSwap is llama-swap in front of one llama-server per model: it
	// routes on the body's model, loads (swaps) the model on first use,
	// answers 404 for an unknown model and proxies /upstream/<model>/….
	LlamaSwap
	// VLLM is an OpenAI-style server whose /v1/models gives each model a
	// root (vLLM's shape; not described in shared/MODELS.md). Chat and
	// embeddings behave as llama-server's.
	VLLM
)

// String returns the flavor's name.
func (f Flavor) String() string {
	return [...]string{"ollama", "llama-server", "llama-swap", "vllm"}[f]
}

// Model is one model a server offers.
type Model struct {
	// Name is what a client sends as model: Ollama's name (":latest" is
	// added when it has no tag), llama-swap's model id, llama-server's
	// --alias ("" for none, and then the id is Path), vLLM's served name.
	Name string
	// Path is the model file: llama-server's -m path (its /v1/models id
	// when Name is ""), vLLM's root.
	Path string
	// Digest is Ollama's digest in /api/tags; "" derives one from Name.
	Digest string
	// Dim is the embedding dimension. 0 means the model cannot embed
	// (llama-server started without --embeddings answers 501); Ollama embeds
	// with any model, at 16 dimensions when Dim is 0.
	Dim int
}

// Chat is a chat request as the server understood it.
type Chat struct {
	Model    string
	Messages []Message
	// Schema is the requested JSON schema (Ollama format, OpenAI
	// response_format json_schema.schema); nil for none or "json".
	Schema json.RawMessage
}

// Message is one chat message.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Action is what a scripted request gets. The zero Action answers as the
// real server would.
type Action struct {
	// Delay answers after this long (a slow server).
	Delay time.Duration
	// Gate holds the request until the channel is closed; then the rest of
	// the Action applies.
	Gate <-chan struct{}
	// Hang never answers: the request waits until the client gives up or
	// the server goes down or stops.
	Hang bool
	// Status answers with this HTTP status and the flavor's error body
	// (404 gives the flavor's model-not-found error).
	Status int
	// Message replaces the error body's message.
	Message string
	// Body answers 200 with exactly these bytes (malformed JSON).
	Body string
	// Content is a chat reply's assistant content (JSON that violates the
	// schema, hostile verdicts).
	Content string
	// Reply computes a chat reply's content from the request.
	Reply func(Chat) string
	// PromptTokens and ReplyTokens replace the token counts a chat reply
	// reports (Ollama's prompt_eval_count and eval_count, OpenAI-style
	// usage); 0 keeps the flavor's example counts (34 and 12 for Ollama,
	// 44 and 48 otherwise). NoUsage leaves the counts out, as Ollama does
	// when they are empty.
	PromptTokens, ReplyTokens int
	NoUsage                   bool
	// Dim gives embedding vectors of this many dimensions.
	Dim int
	// Scale multiplies every embedding value (0 means 1): vectors that are
	// not unit length.
	Scale float64
	// Null writes null as the first value of every embedding vector, which
	// is what llama.cpp's JSON writer makes of a NaN.
	Null bool
}

// Rule scripts the requests that match it: Path (exact, "" for any) and
// Model ("" for any). Times limits the rule to the next Times matching
// requests; 0 means every one.
type Rule struct {
	Path  string
	Model string
	Times int
	Action
}

// Request is one request as the server received it.
type Request struct {
	Method, Path, ContentType string
	// Model is the body's model, or ?model= on a GET, or <model> of an
	// /upstream/<model>/ path.
	Model string
	Body  []byte
}

// Server is a running test model server.
type Server struct {
	// URL is the base URL to configure in Hearth: for Ollama the root
	// (http://127.0.0.1:port), for the OpenAI-style flavors root + "/v1".
	URL string
	// Root is http://127.0.0.1:port.
	Root   string
	Flavor Flavor

	addr string

	mu      sync.Mutex
	models  []Model
	rules   []*Rule
	log     []Request
	pending map[string]int
	srv     *http.Server
	down    chan struct{} // closed when the current listener goes down
	stopped bool

	// llama-swap
	swapMu    sync.Mutex
	loaded    string
	loads     int
	loadDelay time.Duration
}

// New starts a server of flavor f offering models and stops it when the
// test ends. LlamaServer takes exactly one model.
func New(tb testing.TB, f Flavor, models ...Model) *Server {
	tb.Helper()
	s, err := Start(f, models...)
	if err != nil {
		tb.Fatalf("modeltest: %v", err)
	}
	tb.Cleanup(s.Close)
	return s
}

// Start starts a server of flavor f offering models, as New does, for a
// program outside a test (the eval's rerank stand-in); the caller closes it.
func Start(f Flavor, models ...Model) (*Server, error) {
	if f == LlamaServer && len(models) != 1 {
		return nil, fmt.Errorf("llama-server serves exactly one model, got %d", len(models))
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	s := &Server{
		Flavor:  f,
		addr:    ln.Addr().String(),
		models:  models,
		pending: map[string]int{},
	}
	s.Root = "http://" + s.addr
	s.URL = s.Root
	if f != Ollama {
		s.URL += "/v1"
	}
	s.serve(ln)
	return s, nil
}

func (s *Server) serve(ln net.Listener) {
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	s.down = make(chan struct{})
	go s.srv.Serve(ln)
}

// Down closes the listener and every open connection: new requests are
// refused and requests in flight are cut off, as when the box sleeps.
func (s *Server) Down() {
	s.mu.Lock()
	srv, down := s.srv, s.down
	s.srv = nil
	s.mu.Unlock()
	if srv == nil {
		return
	}
	srv.Close()
	close(down)
}

// Up listens again on the same address after Down.
func (s *Server) Up(tb testing.TB) {
	tb.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv != nil || s.stopped {
		return
	}
	var ln net.Listener
	var err error
	for range 50 { // the port may linger briefly after Close
		if ln, err = net.Listen("tcp", s.addr); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil {
		tb.Fatalf("modeltest: listen again on %s: %v", s.addr, err)
	}
	s.serve(ln)
}

// Close stops the server for good.
func (s *Server) Close() {
	s.mu.Lock()
	s.stopped = true
	s.mu.Unlock()
	s.Down()
}

// Script adds rules; the first rule that matches a request and has uses
// left decides it.
func (s *Server) Script(rules ...Rule) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range rules {
		r := rules[i]
		s.rules = append(s.rules, &r)
	}
}

// Reset drops every rule.
func (s *Server) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rules = nil
}

// SetModels replaces the models the server offers (a model pulled or
// removed, a different file behind llama-server).
func (s *Server) SetModels(models ...Model) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.models = models
}

// SetLoadDelay sets how long llama-swap takes to load a model that is not
// the loaded one (its first call is slow).
func (s *Server) SetLoadDelay(d time.Duration) {
	s.swapMu.Lock()
	defer s.swapMu.Unlock()
	s.loadDelay = d
}

// Loaded returns the model llama-swap has loaded and how many loads it did.
func (s *Server) Loaded() (model string, loads int) {
	s.swapMu.Lock()
	defer s.swapMu.Unlock()
	return s.loaded, s.loads
}

// Requests returns a copy of the request log, oldest first.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Request, len(s.log))
	copy(out, s.log)
	return out
}

// Count returns how many requests for path the server received.
func (s *Server) Count(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, r := range s.log {
		if r.Path == path {
			n++
		}
	}
	return n
}

// Pending returns how many requests for path are inside the server now.
func (s *Server) Pending(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pending[path]
}

// WaitPending polls until n requests for path are inside the server, and
// fails the test after testwait.Timeout.
func (s *Server) WaitPending(tb testing.TB, path string, n int) {
	tb.Helper()
	testwait.WaitFor(tb, fmt.Sprintf("modeltest: %d %s requests pending at %s", n, path, s.Flavor), func() bool { return s.Pending(path) == n })
}

// ChatPath, EmbedPath and ProbePath are the paths Hearth's clients use
// for this flavor.
func (s *Server) ChatPath() string {
	if s.Flavor == Ollama {
		return "/api/chat"
	}
	return "/v1/chat/completions"
}

// EmbedPath is the embedding route of the flavor.
func (s *Server) EmbedPath() string {
	if s.Flavor == Ollama {
		return "/api/embed"
	}
	return "/v1/embeddings"
}

// ProbePath is the model list the clients probe.
func (s *Server) ProbePath() string {
	if s.Flavor == Ollama {
		return "/api/tags"
	}
	return "/v1/models"
}

// maxBody bounds a request body.
const maxBody = 64 << 20

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		return
	}
	req := Request{Method: r.Method, Path: r.URL.Path, ContentType: r.Header.Get("Content-Type"),
		Model: requestModel(r, body), Body: body}

	s.mu.Lock()
	s.log = append(s.log, req)
	s.pending[req.Path]++
	down := s.down
	var act Action
	for _, rule := range s.rules {
		if (rule.Path == "" || rule.Path == req.Path) && (rule.Model == "" || rule.Model == req.Model) {
			act = rule.Action
			if rule.Times > 0 {
				if rule.Times--; rule.Times == 0 {
					s.rules = removeRule(s.rules, rule)
				}
			}
			break
		}
	}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.pending[req.Path]--
		s.mu.Unlock()
	}()

	// A request cut off by Down or by the client gets no answer at all:
	// ErrAbortHandler closes the connection without writing a response.
	ctx := r.Context()
	if act.Gate != nil && !wait(ctx, down, act.Gate, 0) {
		panic(http.ErrAbortHandler)
	}
	if act.Hang {
		wait(ctx, down, nil, -1)
		panic(http.ErrAbortHandler)
	}
	if act.Delay > 0 && !wait(ctx, down, nil, act.Delay) {
		panic(http.ErrAbortHandler)
	}
	if act.Status != 0 {
		s.fail(w, req, act.Status, act.Message)
		return
	}
	if act.Body != "" {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, act.Body)
		return
	}
	s.route(w, r, req, act)
}

// wait blocks until gate closes (true), d passes (true; d < 0 never), the
// request is cancelled or the server goes down (false).
func wait(ctx context.Context, down <-chan struct{}, gate <-chan struct{}, d time.Duration) bool {
	var timer <-chan time.Time
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		timer = t.C
	}
	select {
	case <-gate:
		return true
	case <-timer:
		return true
	case <-ctx.Done():
		return false
	case <-down:
		return false
	}
}

func removeRule(rules []*Rule, r *Rule) []*Rule {
	out := rules[:0]
	for _, x := range rules {
		if x != r {
			out = append(out, x)
		}
	}
	return out
}

// requestModel finds the model a request names, as llama-swap does: the
// JSON body's model only when the Content-Type says JSON, ?model= on a
// GET, the <model> of /upstream/<model>/.
func requestModel(r *http.Request, body []byte) string {
	if m, ok := strings.CutPrefix(r.URL.Path, "/upstream/"); ok {
		m, _, _ = strings.Cut(m, "/")
		return m
	}
	if r.Method == http.MethodGet {
		return r.URL.Query().Get("model")
	}
	if !strings.Contains(r.Header.Get("Content-Type"), "application/json") {
		return ""
	}
	var v struct {
		Model string `json:"model"`
	}
	if json.Unmarshal(body, &v) != nil {
		return ""
	}
	return v.Model
}

func (s *Server) route(w http.ResponseWriter, r *http.Request, req Request, act Action) {
	switch s.Flavor {
	case Ollama:
		s.routeOllama(w, r, req, act)
	case LlamaSwap:
		s.routeSwap(w, r, req, act)
	default:
		s.routeOpenAI(w, r, req, act, s.model(0))
	}
}

// model returns model i or the zero Model.
func (s *Server) model(i int) Model {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i < len(s.models) {
		return s.models[i]
	}
	return Model{}
}

func (s *Server) modelList() []Model {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Model(nil), s.models...)
}

// fail writes the flavor's error body for status.
func (s *Server) fail(w http.ResponseWriter, req Request, status int, msg string) {
	switch s.Flavor {
	case Ollama:
		if msg == "" {
			msg = http.StatusText(status)
			if status == http.StatusNotFound {
				msg = fmt.Sprintf("model '%s' not found", req.Model)
			}
		}
		writeJSON(w, status, map[string]string{"error": msg})
	case LlamaSwap:
		if status == http.StatusNotFound {
			if msg == "" {
				msg = "no router for requested model"
			}
			swapError(w, status, msg)
			return
		}
		llamaError(w, status, msg)
	default:
		llamaError(w, status, msg)
	}
}

// llamaError writes llama-server's error envelope.
func llamaError(w http.ResponseWriter, status int, msg string) {
	typ := "server_error"
	switch status {
	case http.StatusBadRequest:
		typ = "invalid_request_error"
	case http.StatusUnauthorized:
		typ = "authentication_error"
	case http.StatusNotFound:
		typ = "not_found_error"
	case http.StatusNotImplemented:
		typ = "not_supported_error"
	case http.StatusServiceUnavailable:
		typ = "unavailable_error"
		if msg == "" {
			msg = "Loading model"
		}
	}
	if msg == "" {
		msg = http.StatusText(status)
	}
	writeJSON(w, status, map[string]any{"error": map[string]any{"code": status, "message": msg, "type": typ}})
}

// swapError writes llama-swap's error envelope.
func swapError(w http.ResponseWriter, status int, msg string) {
	code := "not_found"
	if status != http.StatusNotFound {
		code = strings.ToLower(strings.ReplaceAll(http.StatusText(status), " ", "_"))
	}
	writeJSON(w, status, map[string]any{"src": "llama-swap",
		"error": map[string]any{"message": msg, "type": "invalid_request_error", "param": nil, "code": code}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

// decodeBody decodes a JSON request body; io.EOF for an empty one.
func decodeBody(body []byte, v any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return io.EOF
	}
	return json.Unmarshal(body, v)
}

var errGone = errors.New("modeltest: the request is gone")

package models_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hearth-memory/hearth/server/models"
	"github.com/hearth-memory/hearth/server/models/modeltest"
	"github.com/hearth-memory/hearth/server/models/wire"
	"github.com/hearth-memory/hearth/server/options"
)

var ctx = context.Background()

// extraction is the schema of an extraction reply.
var extraction = models.MustSchema("memories", `{
  "type": "object",
  "required": ["memories"],
  "additionalProperties": false,
  "properties": {
    "memories": {"type": "array", "items": {
      "type": "object",
      "required": ["type", "title", "content", "confidence"],
      "properties": {
        "type": {"enum": ["decision", "constraint", "procedure", "preference", "fact"]},
        "title": {"type": "string", "minLength": 1},
        "content": {"type": "string", "minLength": 1},
        "confidence": {"type": "number", "minimum": 0, "maximum": 1}
      }}}
  }
}`)

type memories struct {
	Memories []struct {
		Type, Title, Content string
		Confidence           float64
	}
}

const oneMemory = `{"memories":[{"type":"decision","title":"Use WAL","content":"SQLite runs in WAL mode.","confidence":0.9}]}`

func request(kind models.Kind) models.Request {
	return models.Request{Kind: kind, System: models.System("Extract memories."),
		User: models.Fence("notes", "we chose WAL"), Schema: extraction}
}

// clock is the injected clock of Poll.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 11, 3, 3, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func newRouter(t *testing.T, cfg models.Config) *models.Router {
	t.Helper()
	if cfg.Model == "" {
		cfg.Model = "m1"
	}
	r, err := models.New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return r
}

// chatModels returns the models of the chat requests srv received.
func chatModels(srv *modeltest.Server) []string {
	var out []string
	for _, r := range srv.Requests() {
		if r.Path == srv.ChatPath() {
			out = append(out, r.Model)
		}
	}
	return out
}

func status(r *models.Router, url string) models.ServerStatus {
	for _, s := range r.Status().Servers {
		if s.URL == url {
			return s
		}
	}
	return models.ServerStatus{}
}

func TestRouter_Call(t *testing.T) {
	t.Parallel()
	t.Run("OKOllama", func(t *testing.T) {
		srv := modeltest.New(t, modeltest.Ollama, modeltest.Model{Name: "m1"})
		srv.Script(modeltest.Rule{Path: "/api/chat", Action: modeltest.Action{Content: "\n" + oneMemory + "\n"}})
		r := newRouter(t, models.Config{URL: srv.URL})
		var got memories
		reply, err := r.Call(ctx, request(models.Extraction), &got)
		if err != nil {
			t.Fatalf("Call: %v", err)
		}
		if reply.Server != srv.URL || reply.Model != "m1" || string(reply.Content) != oneMemory {
			t.Errorf("Call: got %+v", reply)
		}
		if len(got.Memories) != 1 || got.Memories[0].Title != "Use WAL" || got.Memories[0].Confidence != 0.9 {
			t.Errorf("Call out: got %+v", got)
		}
		reqs := srv.Requests()
		if len(reqs) != 1 {
			t.Fatalf("requests: got %d, want 1 (no probe inside a call)", len(reqs))
		}
		var body struct {
			Model    string
			Messages []struct{ Role, Content string }
			Stream   *bool
			Think    *bool
			Format   json.RawMessage
			Options  map[string]any
		}
		if err := json.Unmarshal(reqs[0].Body, &body); err != nil {
			t.Fatal(err)
		}
		if body.Model != "m1" || body.Stream == nil || *body.Stream || body.Think == nil || *body.Think ||
			string(body.Format) != string(extraction.JSON()) || body.Options["temperature"] != 0.0 {
			t.Errorf("request body: got %s", reqs[0].Body)
		}
		if len(body.Messages) != 2 || body.Messages[0].Role != "system" || !strings.HasSuffix(body.Messages[0].Content, models.FenceRule) ||
			body.Messages[1].Content != "<<<DATA notes>>>\nwe chose WAL\n<<<END DATA>>>" {
			t.Errorf("messages: got %+v", body.Messages)
		}
		if reqs[0].ContentType != "application/json" {
			t.Errorf("Content-Type: got %q", reqs[0].ContentType)
		}
	})
	t.Run("OKLlamaServer", func(t *testing.T) {
		srv := modeltest.New(t, modeltest.LlamaServer, modeltest.Model{Path: "/models/Qwen3-8B-Q4_K_M.gguf"})
		srv.Script(modeltest.Rule{Path: "/v1/chat/completions", Action: modeltest.Action{Content: oneMemory}})
		r := newRouter(t, models.Config{URL: srv.URL, Model: "qwen3.5:9b"})
		reply, err := r.Call(ctx, request(models.Extraction), nil)
		if err != nil {
			t.Fatalf("Call: %v", err)
		}
		if reply.Model != "qwen3.5:9b" || string(reply.Content) != oneMemory {
			t.Errorf("Call: got %+v (the reply's own model name is never compared)", reply)
		}
		var body struct {
			Model          string
			Stream         *bool
			ResponseFormat struct {
				Type       string
				JSONSchema struct {
					Name   string
					Strict bool
					Schema json.RawMessage
				} `json:"json_schema"`
			} `json:"response_format"`
			Kwargs map[string]any `json:"chat_template_kwargs"`
		}
		req := srv.Requests()[0]
		if err := json.Unmarshal(req.Body, &body); err != nil {
			t.Fatal(err)
		}
		if req.Path != "/v1/chat/completions" || body.Stream == nil || *body.Stream || body.Kwargs["enable_thinking"] != false ||
			body.ResponseFormat.Type != "json_schema" || body.ResponseFormat.JSONSchema.Name != "memories" ||
			string(body.ResponseFormat.JSONSchema.Schema) != string(extraction.JSON()) {
			t.Errorf("request: %s %s", req.Path, req.Body)
		}
	})
	t.Run("OKLlamaSwapLoads", func(t *testing.T) {
		srv := modeltest.New(t, modeltest.LlamaSwap, modeltest.Model{Name: "qwen3-8b", Path: "/models/q.gguf"})
		srv.SetLoadDelay(30 * time.Millisecond)
		r := newRouter(t, models.Config{URL: srv.URL, Model: "qwen3-8b"})
		r.Poll(ctx)
		if m, _ := srv.Loaded(); m != "" {
			t.Errorf("after Poll: llama-swap loaded %q, want no load from a probe", m)
		}
		if _, err := r.Call(ctx, request(models.Extraction), nil); err != nil {
			t.Fatalf("Call (model not loaded): %v", err)
		}
		if m, loads := srv.Loaded(); m != "qwen3-8b" || loads != 1 {
			t.Errorf("after Call: loaded %q after %d loads, want qwen3-8b after 1", m, loads)
		}
	})
	t.Run("ErrNotConfigured", func(t *testing.T) {
		r, err := models.New(models.FromOptions(options.Default()))
		if err != nil {
			t.Fatal(err)
		}
		if r.Configured() {
			t.Errorf("Configured: got true with no URL")
		}
		if _, err := r.Call(ctx, request(models.Extraction), nil); !errors.Is(err, models.ErrNotConfigured) {
			t.Errorf("Call: got %v, want ErrNotConfigured", err)
		}
	})
	t.Run("ErrInvalid", func(t *testing.T) {
		srv := modeltest.New(t, modeltest.Ollama, modeltest.Model{Name: "m1"})
		r := newRouter(t, models.Config{URL: srv.URL})
		if _, err := r.Call(ctx, models.Request{Kind: models.Review}, nil); !errors.Is(err, models.ErrInvalid) {
			t.Errorf("Call without schema: got %v, want ErrInvalid", err)
		}
		if _, err := r.Call(ctx, models.Request{Kind: "summary", Schema: extraction}, nil); !errors.Is(err, models.ErrInvalid) {
			t.Errorf("Call of unknown kind: got %v, want ErrInvalid", err)
		}
		if n := srv.Count("/api/chat"); n != 0 {
			t.Errorf("chat requests: got %d, want 0", n)
		}
	})
	for _, tc := range []struct {
		name string
		act  modeltest.Action
		want string
	}{
		{"ErrSchemaViolation", modeltest.Action{Content: `{"memories":[{"type":"gossip","title":"t","content":"c","confidence":2}]}`}, "violates schema memories"},
		{"ErrNotJSON", modeltest.Action{Content: "Sure! Here are the memories: ..."}, "not one JSON value"},
		{"ErrMalformedBody", modeltest.Action{Body: `{"message":{"content":`}, "malformed reply"},
		{"ErrStatus500", modeltest.Action{Status: 500, Message: "llama runner process has terminated"}, "http 500: llama runner process has terminated"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := modeltest.New(t, modeltest.Ollama, modeltest.Model{Name: "m1"})
			srv.Script(modeltest.Rule{Path: "/api/chat", Action: tc.act})
			r := newRouter(t, models.Config{URL: srv.URL})
			_, err := r.Call(ctx, request(models.Extraction), nil)
			var ae *models.AttemptError
			if !errors.Is(err, models.ErrUnavailable) || !errors.As(err, &ae) || ae.Model != "m1" || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Call: got %v, want ErrUnavailable with %q", err, tc.want)
			}
			if wire.NoAnswer(err) {
				t.Errorf("Call: %v counted as no answer", err)
			}
			st := status(r, srv.URL)
			if !st.Live || len(st.Failures) != 1 || st.Failures[0] != (models.ModelFailures{Model: "m1", Count: 1}) {
				t.Errorf("status: got live=%v failures=%+v, want live with m1 failed once", st.Live, st.Failures)
			}
		})
	}
	t.Run("ErrSchemaHidesReply", func(t *testing.T) {
		srv := modeltest.New(t, modeltest.Ollama, modeltest.Model{Name: "m1"})
		secret := "ghp_0123456789abcdefghijABCDEFGHIJ012345"
		srv.Script(modeltest.Rule{Path: "/api/chat", Action: modeltest.Action{Content: `{"memories":"` + secret + `"}`}})
		r := newRouter(t, models.Config{URL: srv.URL})
		_, err := r.Call(ctx, request(models.Extraction), nil)
		if err == nil || strings.Contains(err.Error(), secret) {
			t.Errorf("Call: got %v, want a failure that does not echo the reply", err)
		}
	})
	t.Run("ErrTimeout", func(t *testing.T) {
		slow := modeltest.New(t, modeltest.Ollama, modeltest.Model{Name: "m1"})
		slow.Script(modeltest.Rule{Path: "/api/chat", Action: modeltest.Action{Hang: true}})
		fallback := modeltest.New(t, modeltest.Ollama, modeltest.Model{Name: "m1"})
		r := newRouter(t, models.Config{URL: slow.URL, FallbackURL: fallback.URL, Timeout: 100 * time.Millisecond,
			Chains: map[models.Kind][]string{models.Extraction: {"m1", "m2"}}})
		reply, err := r.Call(ctx, request(models.Extraction), nil)
		if err != nil || reply.Server != fallback.URL {
			t.Fatalf("Call: got %+v, %v; want the fallback's reply", reply, err)
		}
		if got := chatModels(slow); len(got) != 1 {
			t.Errorf("slow server got models %v, want only m1: a server that does not answer is left at once", got)
		}
		if st := status(r, slow.URL); st.Live {
			t.Errorf("slow server live after a timeout, want down until its next probe")
		}
	})
	t.Run("ErrContextCancelled", func(t *testing.T) {
		srv := modeltest.New(t, modeltest.Ollama, modeltest.Model{Name: "m1"})
		srv.Script(modeltest.Rule{Path: "/api/chat", Action: modeltest.Action{Hang: true}})
		r := newRouter(t, models.Config{URL: srv.URL})
		cctx, cancel := context.WithCancel(ctx)
		go func() {
			srv.WaitPending(t, "/api/chat", 1)
			cancel()
		}()
		if _, err := r.Call(cctx, request(models.Extraction), nil); !errors.Is(err, context.Canceled) {
			t.Fatalf("Call: got %v, want context.Canceled", err)
		}
		if st := status(r, srv.URL); !st.Live || len(st.Failures) != 0 || st.InFlight != 0 {
			t.Errorf("status after the caller gave up: %+v, want live, no failure, nothing in flight", st)
		}
	})
}

func TestRouter_Failover(t *testing.T) {
	t.Parallel()
	chains := map[models.Kind][]string{models.Review: {"a", "b"}}

	t.Run("OKNextModelSameServer", func(t *testing.T) {
		primary := modeltest.New(t, modeltest.Ollama, modeltest.Model{Name: "b"}) // a is not pulled: 404
		fallback := modeltest.New(t, modeltest.Ollama, modeltest.Model{Name: "a"}, modeltest.Model{Name: "b"})
		r := newRouter(t, models.Config{URL: primary.URL, FallbackURL: fallback.URL, Chains: chains})
		reply, err := r.Call(ctx, request(models.Review), nil)
		if err != nil || reply.Server != primary.URL || reply.Model != "b" {
			t.Fatalf("Call: got %+v, %v; want b on the primary", reply, err)
		}
		if got := fmt.Sprint(chatModels(primary)); got != "[a b]" {
			t.Errorf("primary got %s, want [a b]", got)
		}
		if n := fallback.Count("/api/chat"); n != 0 {
			t.Errorf("fallback got %d calls, want 0", n)
		}
		if st := status(r, primary.URL); !st.Live || fmt.Sprint(st.Failures) != "[{a 1}]" {
			t.Errorf("primary status: live=%v failures=%v, want live with a failed once", st.Live, st.Failures)
		}
	})
	t.Run("OKNextServerAfterChain", func(t *testing.T) {
		primary := modeltest.New(t, modeltest.Ollama, modeltest.Model{Name: "a"}, modeltest.Model{Name: "b"})
		primary.Script(modeltest.Rule{Path: "/api/chat", Action: modeltest.Action{Status: 500}})
		fallback := modeltest.New(t, modeltest.Ollama, modeltest.Model{Name: "a"}, modeltest.Model{Name: "b"})
		direct := modeltest.New(t, modeltest.Ollama, modeltest.Model{Name: "a"})
		r := newRouter(t, models.Config{URL: primary.URL, FallbackURL: fallback.URL, DirectURLs: []string{direct.URL}, Chains: chains})
		reply, err := r.Call(ctx, request(models.Review), nil)
		if err != nil || reply.Server != fallback.URL || reply.Model != "a" {
			t.Fatalf("Call: got %+v, %v; want a on the fallback", reply, err)
		}
		if got := fmt.Sprint(chatModels(primary)); got != "[a b]" {
			t.Errorf("primary got %s, want [a b]", got)
		}
		if n := direct.Count("/api/chat"); n != 0 {
			t.Errorf("direct got %d calls, want 0 while a primary is live", n)
		}
	})
	t.Run("OKDownMovesOn", func(t *testing.T) {
		primary := modeltest.New(t, modeltest.Ollama, modeltest.Model{Name: "a"})
		primary.Down()
		fallback := modeltest.New(t, modeltest.LlamaServer, modeltest.Model{Path: "/m/a.gguf"})
		r := newRouter(t, models.Config{URL: primary.URL, FallbackURL: fallback.URL, Chains: chains})
		reply, err := r.Call(ctx, request(models.Review), nil)
		if err != nil || reply.Server != fallback.URL || reply.Model != "a" {
			t.Fatalf("Call: got %+v, %v; want a on the fallback", reply, err)
		}
		if st := status(r, primary.URL); st.Live || fmt.Sprint(st.Failures) != "[{a 1}]" {
			t.Errorf("primary: live=%v failures=%v, want down with a failed once (b never tried on a dead server)", st.Live, st.Failures)
		}
		// Down until its next probe: the next call goes straight to the fallback.
		primary.Up(t)
		if _, err := r.Call(ctx, request(models.Review), nil); err != nil {
			t.Fatal(err)
		}
		if n := primary.Count("/api/chat"); n != 0 {
			t.Errorf("primary got %d calls while down, want 0", n)
		}
		if n := fallback.Count("/v1/chat/completions"); n != 2 {
			t.Errorf("fallback got %d calls, want 2", n)
		}
	})
	t.Run("OKDirectWhilePrimariesDown", func(t *testing.T) {
		primary := modeltest.New(t, modeltest.Ollama, modeltest.Model{Name: "a"})
		fallback := modeltest.New(t, modeltest.Ollama, modeltest.Model{Name: "a"})
		d1 := modeltest.New(t, modeltest.Ollama, modeltest.Model{Name: "a"})
		d2 := modeltest.New(t, modeltest.LlamaSwap, modeltest.Model{Name: "a", Path: "/m/a.gguf"})
		d1.Down()
		primary.Down()
		fallback.Down()
		r := newRouter(t, models.Config{URL: primary.URL, FallbackURL: fallback.URL, DirectURLs: []string{d1.URL, d2.URL}, Chains: chains})
		reply, err := r.Call(ctx, request(models.Review), nil)
		if err != nil || reply.Server != d2.URL {
			t.Fatalf("Call: got %+v, %v; want the second direct server", reply, err)
		}
		for _, s := range r.Status().Servers {
			if s.Live != (s.URL == d2.URL) {
				t.Errorf("%s (%s): live=%v", s.URL, s.Tier, s.Live)
			}
		}
	})
	t.Run("ErrDirectNotWhileOnePrimaryLive", func(t *testing.T) {
		// ollama_url is down, ollama_fallback_url answers with errors: it is
		// live, so the direct server stays out and the call fails.
		primary := modeltest.New(t, modeltest.Ollama, modeltest.Model{Name: "a"})
		primary.Down()
		fallback := modeltest.New(t, modeltest.Ollama, modeltest.Model{Name: "a"}, modeltest.Model{Name: "b"})
		fallback.Script(modeltest.Rule{Path: "/api/chat", Action: modeltest.Action{Status: 500}})
		direct := modeltest.New(t, modeltest.Ollama, modeltest.Model{Name: "a"})
		r := newRouter(t, models.Config{URL: primary.URL, FallbackURL: fallback.URL, DirectURLs: []string{direct.URL}, Chains: chains})
		r.Poll(ctx)
		if _, err := r.Call(ctx, request(models.Review), nil); !errors.Is(err, models.ErrUnavailable) {
			t.Fatalf("Call: got %v, want ErrUnavailable", err)
		}
		if got := fmt.Sprint(chatModels(fallback)); got != "[a b]" {
			t.Errorf("fallback got %s, want [a b]", got)
		}
		if n := direct.Count("/api/chat"); n != 0 {
			t.Errorf("direct got %d calls, want 0 while the fallback is live", n)
		}
		// Once the fallback stops answering too, the direct tier opens
		// within the same call.
		fallback.Down()
		reply, err := r.Call(ctx, request(models.Review), nil)
		if err != nil || reply.Server != direct.URL {
			t.Fatalf("Call with both primaries down: got %+v, %v; want the direct server", reply, err)
		}
	})
	t.Run("ErrAllFailed", func(t *testing.T) {
		primary := modeltest.New(t, modeltest.Ollama, modeltest.Model{Name: "a"}, modeltest.Model{Name: "b"})
		primary.Script(modeltest.Rule{Path: "/api/chat", Action: modeltest.Action{Status: 503}})
		fallback := modeltest.New(t, modeltest.LlamaSwap, modeltest.Model{Name: "c", Path: "/m/c.gguf"}) // neither a nor b: 404
		r := newRouter(t, models.Config{URL: primary.URL, FallbackURL: fallback.URL, Chains: chains})
		_, err := r.Call(ctx, request(models.Review), nil)
		if !errors.Is(err, models.ErrUnavailable) {
			t.Fatalf("Call: got %v, want ErrUnavailable", err)
		}
		for _, want := range []string{
			primary.URL + " model a: http 503", primary.URL + " model b: http 503",
			fallback.URL + " model a: http 404: no router for requested model", fallback.URL + " model b: http 404",
		} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("Call error %q lacks %q", err, want)
			}
		}
		if _, err := r.Call(ctx, request(models.Review), nil); !errors.Is(err, models.ErrUnavailable) {
			t.Errorf("second Call: got %v", err)
		}
		if st := status(r, fallback.URL); !st.Live || st.Calls != 2 || fmt.Sprint(st.Failures) != "[{a 2} {b 2}]" {
			t.Errorf("fallback status: %+v, want live, 2 calls, a and b failed twice", st)
		}
	})
	t.Run("ErrNoLiveServer", func(t *testing.T) {
		primary := modeltest.New(t, modeltest.Ollama)
		primary.Down()
		r := newRouter(t, models.Config{URL: primary.URL})
		r.Poll(ctx)
		_, err := r.Call(ctx, request(models.Review), nil)
		if !errors.Is(err, models.ErrUnavailable) || !strings.Contains(err.Error(), "no live server") {
			t.Fatalf("Call: got %v, want ErrUnavailable: no live server", err)
		}
	})
}

func TestRouter_Chains(t *testing.T) {
	t.Parallel()
	srv := modeltest.New(t, modeltest.Ollama, modeltest.Model{Name: "x:1"}, modeltest.Model{Name: "r1"}, modeltest.Model{Name: "ans"})
	o := options.Default()
	o.OllamaURL = srv.URL
	o.OllamaModel = "x:1"
	o.OllamaModels = options.ModelChains{Review: []string{"r1", "r2"}, Answer: []string{"ans"}}
	r, err := models.New(models.FromOptions(o))
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(r.Chain(models.Extraction), r.Chain(models.Review), r.Chain(models.Answer)); got != "[x:1] [r1 r2] [ans]" {
		t.Errorf("chains: got %s", got)
	}
	for _, k := range []models.Kind{models.Extraction, models.Review, models.Answer} {
		if _, err := r.Call(ctx, request(k), nil); err != nil {
			t.Fatalf("Call %s: %v", k, err)
		}
	}
	if got := fmt.Sprint(chatModels(srv)); got != "[x:1 r1 ans]" {
		t.Errorf("models called: got %s, want [x:1 r1 ans]", got)
	}
	t.Run("ErrNoModel", func(t *testing.T) {
		if _, err := models.New(models.Config{URL: srv.URL}); err == nil {
			t.Errorf("New without a model: got nil, want an error")
		}
		if _, err := models.New(models.Config{URL: "ftp://x", Model: "m"}); err == nil {
			t.Errorf("New with an ftp URL: got nil, want an error")
		}
	})
}

func TestRouter_Poll(t *testing.T) {
	t.Parallel()
	t.Run("OKCadence", func(t *testing.T) {
		clk := newClock()
		a := modeltest.New(t, modeltest.Ollama, modeltest.Model{Name: "m1"})
		b := modeltest.New(t, modeltest.LlamaServer, modeltest.Model{Path: "/m/x.gguf"})
		r := newRouter(t, models.Config{URL: a.URL, FallbackURL: b.URL, Now: clk.Now})
		for _, s := range r.Status().Servers {
			if !s.Live || s.Probed {
				t.Errorf("%s before any probe: live=%v probed=%v, want live and not probed", s.URL, s.Live, s.Probed)
			}
		}
		probes := func() string { return fmt.Sprint(a.Count("/api/tags"), b.Count("/v1/models")) }
		r.Poll(ctx)
		if got := probes(); got != "1 1" {
			t.Fatalf("probes after the first Poll: got %s, want 1 1", got)
		}
		clk.Add(models.DefaultProbeEvery - time.Millisecond)
		r.Poll(ctx)
		if got := probes(); got != "1 1" {
			t.Errorf("probes after 14.999 s: got %s, want 1 1", got)
		}
		clk.Add(time.Millisecond)
		r.Poll(ctx)
		if got := probes(); got != "2 2" {
			t.Errorf("probes after 15 s: got %s, want 2 2", got)
		}
		st := status(r, b.URL)
		if !st.Live || !st.Probed || !st.LastProbe.Equal(clk.Now()) || fmt.Sprint(st.Models) != "[/m/x.gguf]" || st.Format != "openai" {
			t.Errorf("status: %+v", st)
		}
		if _, err := r.Call(ctx, request(models.Extraction), nil); err != nil {
			t.Fatal(err)
		}
		if got := probes(); got != "2 2" {
			t.Errorf("probes after a call: got %s, want 2 2 (never inside a call)", got)
		}
	})
	t.Run("OKDownUntilProbe", func(t *testing.T) {
		clk := newClock()
		primary := modeltest.New(t, modeltest.Ollama, modeltest.Model{Name: "m1"})
		direct := modeltest.New(t, modeltest.Ollama, modeltest.Model{Name: "m1"})
		r := newRouter(t, models.Config{URL: primary.URL, DirectURLs: []string{direct.URL}, Now: clk.Now})
		primary.Down()
		r.Poll(ctx)
		st := status(r, primary.URL)
		if st.Live || !strings.Contains(st.ProbeError, "no answer") {
			t.Fatalf("primary after a refused probe: live=%v error=%q", st.Live, st.ProbeError)
		}
		if got := r.LiveCount(); got != 1 {
			t.Errorf("LiveCount: got %d, want 1 (the direct server)", got)
		}
		reply, err := r.Call(ctx, request(models.Extraction), nil)
		if err != nil || reply.Server != direct.URL {
			t.Fatalf("Call: got %+v, %v; want the direct server", reply, err)
		}
		primary.Up(t)
		clk.Add(10 * time.Second)
		r.Poll(ctx)
		if reply, _ := r.Call(ctx, request(models.Extraction), nil); reply.Server != direct.URL {
			t.Errorf("Call 10 s later: got %s, want the direct server until the primary's next probe", reply.Server)
		}
		clk.Add(5 * time.Second)
		r.Poll(ctx)
		if reply, _ := r.Call(ctx, request(models.Extraction), nil); reply.Server != primary.URL {
			t.Errorf("Call after the next probe: got %s, want the primary", reply.Server)
		}
		if n := direct.Count("/api/chat"); n != 2 {
			t.Errorf("direct calls: got %d, want 2", n)
		}
	})
	t.Run("OKProbeTimeout", func(t *testing.T) {
		srv := modeltest.New(t, modeltest.Ollama, modeltest.Model{Name: "m1"})
		srv.Script(modeltest.Rule{Path: "/api/tags", Times: 1, Action: modeltest.Action{Hang: true}})
		r := newRouter(t, models.Config{URL: srv.URL, ProbeTimeout: 50 * time.Millisecond})
		r.Poll(ctx)
		if st := status(r, srv.URL); st.Live || !st.Probed {
			t.Errorf("after a hung probe: live=%v probed=%v, want down", st.Live, st.Probed)
		}
	})
	t.Run("OKProbeNotAModelServer", func(t *testing.T) {
		srv := modeltest.New(t, modeltest.Ollama, modeltest.Model{Name: "m1"})
		srv.Script(modeltest.Rule{Path: "/api/tags", Action: modeltest.Action{Body: `<html>router login</html>`}})
		r := newRouter(t, models.Config{URL: srv.URL})
		r.Poll(ctx)
		if st := status(r, srv.URL); st.Live || st.ProbeError == "" {
			t.Errorf("after a probe answered with HTML: live=%v error=%q, want down", st.Live, st.ProbeError)
		}
	})
	t.Run("OKCancelledPollChangesNothing", func(t *testing.T) {
		srv := modeltest.New(t, modeltest.Ollama, modeltest.Model{Name: "m1"})
		srv.Script(modeltest.Rule{Path: "/api/tags", Times: 1, Action: modeltest.Action{Hang: true}})
		r := newRouter(t, models.Config{URL: srv.URL})
		cctx, cancel := context.WithCancel(ctx)
		go func() {
			srv.WaitPending(t, "/api/tags", 1)
			cancel()
		}()
		r.Poll(cctx)
		if st := status(r, srv.URL); !st.Live || st.Probed {
			t.Errorf("after a cancelled Poll: live=%v probed=%v, want live, not probed", st.Live, st.Probed)
		}
	})
}

func TestRouter_FewestInFlight(t *testing.T) {
	t.Parallel()
	t.Run("OKTieGoesToURL", func(t *testing.T) {
		gate := make(chan struct{})
		a := modeltest.New(t, modeltest.Ollama, modeltest.Model{Name: "m1"})
		b := modeltest.New(t, modeltest.Ollama, modeltest.Model{Name: "m1"})
		for _, s := range []*modeltest.Server{a, b} {
			s.Script(modeltest.Rule{Path: "/api/chat", Action: modeltest.Action{Gate: gate}})
		}
		r := newRouter(t, models.Config{URL: a.URL, FallbackURL: b.URL})
		var wg sync.WaitGroup
		start := func() {
			wg.Go(func() {
				if _, err := r.Call(ctx, request(models.Extraction), nil); err != nil {
					t.Errorf("Call: %v", err)
				}
			})
		}
		start()
		a.WaitPending(t, "/api/chat", 1) // tie at 0: ollama_url
		start()
		b.WaitPending(t, "/api/chat", 1) // 1 against 0: the fallback
		start()
		a.WaitPending(t, "/api/chat", 2) // tie at 1: ollama_url
		if got := fmt.Sprint(status(r, a.URL).InFlight, status(r, b.URL).InFlight); got != "2 1" {
			t.Errorf("in flight: got %s, want 2 1", got)
		}
		close(gate)
		wg.Wait()
		if got := fmt.Sprint(status(r, a.URL).InFlight, status(r, b.URL).InFlight); got != "0 0" {
			t.Errorf("in flight after: got %s, want 0 0", got)
		}
	})
	t.Run("OKUnderConcurrency", func(t *testing.T) {
		const n, calls = 3, 30
		gate := make(chan struct{})
		var srvs []*modeltest.Server
		for range n {
			s := modeltest.New(t, modeltest.Ollama, modeltest.Model{Name: "m1"})
			s.Script(modeltest.Rule{Path: "/api/chat", Action: modeltest.Action{Gate: gate}})
			srvs = append(srvs, s)
		}
		r := newRouter(t, models.Config{URL: srvs[0].URL, FallbackURL: srvs[1].URL, DirectURLs: []string{srvs[2].URL}})
		// The direct server is not used while a primary is live: calls split
		// between the first two.
		var wg sync.WaitGroup
		for range calls {
			wg.Go(func() {
				if _, err := r.Call(ctx, request(models.Extraction), nil); err != nil {
					t.Errorf("Call: %v", err)
				}
			})
		}
		srvs[0].WaitPending(t, "/api/chat", calls/2)
		srvs[1].WaitPending(t, "/api/chat", calls/2)
		if got := srvs[2].Pending("/api/chat"); got != 0 {
			t.Errorf("direct server: %d calls, want 0", got)
		}
		close(gate)
		wg.Wait()
	})
}

func TestRouter_LiveCount(t *testing.T) {
	t.Parallel()
	a := modeltest.New(t, modeltest.Ollama)
	b := modeltest.New(t, modeltest.Ollama)
	c := modeltest.New(t, modeltest.Ollama)
	r := newRouter(t, models.Config{URL: a.URL, FallbackURL: b.URL, DirectURLs: []string{c.URL}})
	if got := r.LiveCount(); got != 2 {
		t.Errorf("LiveCount before probes: got %d, want 2", got)
	}
	a.Down()
	r.Poll(ctx)
	if got := r.LiveCount(); got != 1 {
		t.Errorf("LiveCount with a down: got %d, want 1", got)
	}
}

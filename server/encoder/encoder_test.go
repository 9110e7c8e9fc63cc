package encoder_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hearth-memory/hearth/server/encoder"
	"github.com/hearth-memory/hearth/server/models/modeltest"
	"github.com/hearth-memory/hearth/server/models/wire"
	"github.com/hearth-memory/hearth/server/options"
)

var ctx = context.Background()

type clock struct {
	mu sync.Mutex
	t  time.Time
}

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

func newEncoder(t testing.TB, cfg encoder.Config) *encoder.Encoder {
	t.Helper()
	if cfg.Model == "" {
		cfg.Model = "qwen3-emb-0.6b"
	}
	e, err := encoder.New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return e
}

// live returns an encoder that has answered its first probe.
func live(t testing.TB, cfg encoder.Config) *encoder.Encoder {
	t.Helper()
	e := newEncoder(t, cfg)
	e.Poll(ctx)
	if !e.Live() {
		t.Fatalf("encoder not live after its probe: %+v", e.Status())
	}
	return e
}

// inputs returns the inputs of the embedding requests srv received.
func inputs(t *testing.T, srv *modeltest.Server) [][]string {
	t.Helper()
	var out [][]string
	for _, r := range srv.Requests() {
		if r.Path != srv.EmbedPath() {
			continue
		}
		var body struct{ Input []string }
		if err := json.Unmarshal(r.Body, &body); err != nil {
			t.Fatalf("request body %s: %v", r.Body, err)
		}
		out = append(out, body.Input)
	}
	return out
}

func sameVector(t *testing.T, what string, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: got %d dimensions, want %d", what, len(got), len(want))
	}
	for i := range got {
		if math.Abs(float64(got[i]-want[i])) > 1e-6 {
			t.Fatalf("%s[%d]: got %v, want %v", what, i, got[i], want[i])
		}
	}
}

func unit(t *testing.T, what string, v []float32) {
	t.Helper()
	var sum float64
	for _, x := range v {
		sum += float64(x) * float64(x)
	}
	if math.Abs(sum-1) > 1e-5 {
		t.Errorf("%s: squared norm %v, want 1", what, sum)
	}
}

func TestQueryText(t *testing.T) {
	t.Parallel()
	const want = "Instruct: Given a web search query, retrieve relevant passages that answer the query\nQuery:how do we retry webhooks"
	if got := encoder.QueryText("how do we retry webhooks"); got != want {
		t.Errorf("QueryText: got %q, want %q", got, want)
	}
	if got := encoder.RecordText("Backoff", "Failed deliveries retry with backoff."); got != "Backoff\nFailed deliveries retry with backoff." {
		t.Errorf("RecordText: got %q", got)
	}
}

func TestDigest(t *testing.T) {
	t.Parallel()
	d := encoder.Digest("m", "s", "t")
	if len(d) != 64 || strings.Trim(d, "0123456789abcdef") != "" {
		t.Fatalf("Digest: got %q, want 64 lower-case hex digits", d)
	}
	if encoder.Digest("m", "s", "t") != d {
		t.Errorf("Digest is not deterministic")
	}
	seen := map[string]string{d: "m s t"}
	for _, tc := range [][3]string{
		{"m2", "s", "t"}, {"m", "s2", "t"}, {"m", "s", "t2"}, {"ms", "", "t"}, {"", "ms", "t"}, {"m", "st", ""}, {"m", "", "st"},
	} {
		got := encoder.Digest(tc[0], tc[1], tc[2])
		if prev, ok := seen[got]; ok {
			t.Errorf("Digest%q equals the digest of %s", tc, prev)
		}
		seen[got] = fmt.Sprint(tc)
	}
}

func TestEncoder_Embed(t *testing.T) {
	t.Parallel()
	texts := []string{encoder.RecordText("a", "b"), "c", "d"}
	for _, tc := range []struct {
		name     string
		flavor   modeltest.Flavor
		models   []modeltest.Model
		model    string
		snapshot string
	}{
		{"OKOllama", modeltest.Ollama,
			[]modeltest.Model{{Name: "qwen3:8b"}, {Name: "qwen3-embedding:0.6b", Digest: "ac6da0dfba84", Dim: 8}},
			"qwen3-embedding:0.6b", "ac6da0dfba84"},
		{"OKOllamaLatest", modeltest.Ollama,
			[]modeltest.Model{{Name: "qwen3-embedding", Digest: "d1", Dim: 8}}, "qwen3-embedding:latest", "d1"},
		{"OKLlamaServer", modeltest.LlamaServer,
			[]modeltest.Model{{Path: "/models/Qwen3-Embedding-0.6B-Q8_0.gguf", Dim: 8}}, "qwen3-emb-0.6b", "Qwen3-Embedding-0.6B-Q8_0.gguf"},
		{"OKLlamaServerAlias", modeltest.LlamaServer,
			[]modeltest.Model{{Name: "qwen3-emb-0.6b", Path: "/m/x.gguf", Dim: 8}}, "qwen3-emb-0.6b", "qwen3-emb-0.6b"},
		{"OKLlamaSwap", modeltest.LlamaSwap,
			[]modeltest.Model{{Name: "chat", Path: "/m/chat.gguf"}, {Name: "qwen3-emb-0.6b", Path: "/models/Qwen3-Embedding-0.6B-Q8_0.gguf", Dim: 8}},
			"qwen3-emb-0.6b", "Qwen3-Embedding-0.6B-Q8_0.gguf"},
		{"OKRoot", modeltest.VLLM,
			[]modeltest.Model{{Name: "Qwen/Qwen3-Embedding-0.6B", Path: "/root/.cache/huggingface/hub/models--Qwen--Qwen3-Embedding-0.6B/snapshots/c54f2e6e80b2d7b7de06f51cec4959f6b3e03418", Dim: 8}},
			"Qwen/Qwen3-Embedding-0.6B", "c54f2e6e80b2d7b7de06f51cec4959f6b3e03418"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := modeltest.New(t, tc.flavor, tc.models...)
			e := live(t, encoder.Config{URL: srv.URL, Model: tc.model})
			batch, err := e.Embed(ctx, texts)
			if err != nil {
				t.Fatalf("Embed: %v", err)
			}
			if batch.Model != tc.model || batch.Snapshot != tc.snapshot || len(batch.Vectors) != len(texts) {
				t.Fatalf("Embed: got model %q snapshot %q %d vectors; want %q %q %d", batch.Model, batch.Snapshot, len(batch.Vectors), tc.model, tc.snapshot, len(texts))
			}
			for i, text := range texts {
				sameVector(t, fmt.Sprintf("vector %d", i), batch.Vectors[i], modeltest.Vector(text, 8))
			}
			if got := fmt.Sprint(inputs(t, srv)); got != fmt.Sprint([][]string{texts}) {
				t.Errorf("inputs sent: got %q, want %q (records carry no instruction)", got, texts)
			}
			for _, r := range srv.Requests() {
				if r.Path == srv.EmbedPath() && (r.Model != tc.model || r.ContentType != "application/json") {
					t.Errorf("embed request: model %q content type %q", r.Model, r.ContentType)
				}
			}
			if st := e.Status(); st.Snapshot != tc.snapshot || st.Dim != 8 || st.Failures != 0 {
				t.Errorf("Status: %+v", st)
			}
		})
	}
	t.Run("OKNormalised", func(t *testing.T) {
		srv := modeltest.New(t, modeltest.LlamaServer, modeltest.Model{Path: "/m/e.gguf", Dim: 16})
		srv.Script(modeltest.Rule{Path: "/v1/embeddings", Action: modeltest.Action{Scale: 7.5}})
		e := live(t, encoder.Config{URL: srv.URL})
		batch, err := e.Embed(ctx, []string{"x", "y"})
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range batch.Vectors {
			unit(t, fmt.Sprint("vector ", i), v)
		}
		sameVector(t, "x", batch.Vectors[0], modeltest.Vector("x", 16))
	})
	t.Run("OKBatches", func(t *testing.T) {
		srv := modeltest.New(t, modeltest.Ollama, modeltest.Model{Name: "e", Dim: 4})
		e := live(t, encoder.Config{URL: srv.URL, Model: "e", MaxBatch: 2})
		texts := []string{"1", "2", "3", "4", "5"}
		batch, err := e.Embed(ctx, texts)
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(inputs(t, srv)); got != "[[1 2] [3 4] [5]]" {
			t.Errorf("requests: got %s, want [[1 2] [3 4] [5]]", got)
		}
		for i, text := range texts {
			sameVector(t, text, batch.Vectors[i], modeltest.Vector(text, 4))
		}
		if got := srv.Count("/api/tags"); got != 3 {
			t.Errorf("/api/tags requests: got %d, want 3 (the probe, then the snapshot before and after)", got)
		}
	})
	t.Run("OKLlamaSwapLoadsOnlyWhenEmbedding", func(t *testing.T) {
		srv := modeltest.New(t, modeltest.LlamaSwap, modeltest.Model{Name: "emb", Path: "/m/Qwen3-Embedding-0.6B-f16.gguf", Dim: 4})
		srv.SetLoadDelay(20 * time.Millisecond)
		e := newEncoder(t, encoder.Config{URL: srv.URL, Model: "emb"})
		e.Poll(ctx)
		if m, loads := srv.Loaded(); m != "" || loads != 0 || !e.Live() {
			t.Fatalf("after the probe: loaded %q (%d loads), live %v; want nothing loaded and live", m, loads, e.Live())
		}
		for range 2 {
			if _, err := e.Embed(ctx, []string{"a"}); err != nil {
				t.Fatal(err)
			}
		}
		if m, loads := srv.Loaded(); m != "emb" || loads != 1 {
			t.Errorf("after embedding: loaded %q after %d loads, want emb after 1", m, loads)
		}
		if got := srv.Count("/v1/models"); got != 2 {
			t.Errorf("/v1/models requests: got %d, want 2 (the probe, then once to learn it is llama-swap)", got)
		}
		if got := srv.Count("/upstream/emb/v1/models"); got != 4 {
			t.Errorf("upstream snapshot reads: got %d, want 4", got)
		}
	})
	t.Run("OKEmpty", func(t *testing.T) {
		srv := modeltest.New(t, modeltest.Ollama, modeltest.Model{Name: "e", Digest: "d", Dim: 4})
		e := live(t, encoder.Config{URL: srv.URL, Model: "e"})
		batch, err := e.Embed(ctx, nil)
		if err != nil || batch.Snapshot != "d" || len(batch.Vectors) != 0 || srv.Count("/api/embed") != 0 {
			t.Errorf("Embed(nil): got %+v, %v", batch, err)
		}
	})
	for _, tc := range []struct {
		name   string
		flavor modeltest.Flavor
		cfg    encoder.Config
		rules  []modeltest.Rule
		want   string
		texts  []string
	}{
		{"ErrDimensionFixed", modeltest.LlamaServer, encoder.Config{Dim: 1024}, nil, "vector 0 has 8 dimensions, want 1024", nil},
		{"ErrDimensionMixed", modeltest.Ollama, encoder.Config{},
			[]modeltest.Rule{{Path: "/api/embed", Action: modeltest.Action{Body: `{"embeddings":[[1,0],[0,1,0]]}`}}}, "vector 1 has 3 dimensions, want 2",
			[]string{"a", "b"}},
		{"ErrNaNLlamaServer", modeltest.LlamaServer, encoder.Config{},
			[]modeltest.Rule{{Path: "/v1/embeddings", Action: modeltest.Action{Null: true}}}, "not a number (NaN?)", nil},
		{"ErrNaNOllama", modeltest.Ollama, encoder.Config{},
			[]modeltest.Rule{{Path: "/api/embed", Action: modeltest.Action{Null: true}}}, "not a number (NaN?)", nil},
		{"ErrOverflow", modeltest.Ollama, encoder.Config{},
			[]modeltest.Rule{{Path: "/api/embed", Action: modeltest.Action{Body: `{"embeddings":[[1e39,0]]}`}}}, "out of float32 range", nil},
		{"ErrZero", modeltest.Ollama, encoder.Config{},
			[]modeltest.Rule{{Path: "/api/embed", Action: modeltest.Action{Body: `{"embeddings":[[0,0]]}`}}}, "norm 0", nil},
		{"ErrCount", modeltest.Ollama, encoder.Config{},
			[]modeltest.Rule{{Path: "/api/embed", Action: modeltest.Action{Body: `{"embeddings":[]}`}}}, "0 vectors for 1 texts", nil},
		{"ErrIndex", modeltest.LlamaServer, encoder.Config{},
			[]modeltest.Rule{{Path: "/v1/embeddings", Action: modeltest.Action{Body: `{"data":[{"embedding":[1],"index":3}]}`}}}, "vector index 3 out of place", nil},
		{"ErrMalformed", modeltest.LlamaServer, encoder.Config{},
			[]modeltest.Rule{{Path: "/v1/embeddings", Action: modeltest.Action{Body: `{"data":[`}}}, "malformed reply", nil},
		{"ErrNoEmbeddings", modeltest.LlamaServer, encoder.Config{},
			[]modeltest.Rule{{Path: "/v1/embeddings", Action: modeltest.Action{Status: 501, Message: "This server does not support embeddings. Start it with `--embeddings`"}}},
			"http 501: This server does not support embeddings", nil},
		{"ErrModelNotListed", modeltest.Ollama, encoder.Config{Model: "nomic-embed-text"}, nil, "model nomic-embed-text is not listed", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := modeltest.New(t, tc.flavor, modeltest.Model{Name: "qwen3-emb-0.6b", Path: "/m/e.gguf", Dim: 8})
			srv.Script(tc.rules...)
			tc.cfg.URL = srv.URL
			e := live(t, tc.cfg)
			if tc.texts == nil {
				tc.texts = []string{"a"}
			}
			_, err := e.Embed(ctx, tc.texts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Embed: got %v, want %q", err, tc.want)
			}
			st := e.Status()
			if !st.Live || st.Failures != 1 || !strings.Contains(st.LastError, tc.want) {
				t.Errorf("Status: %+v, want live (it answered) with one failure", st)
			}
		})
	}
	t.Run("ErrLearnedDimension", func(t *testing.T) {
		srv := modeltest.New(t, modeltest.Ollama, modeltest.Model{Name: "e", Dim: 4})
		e := live(t, encoder.Config{URL: srv.URL, Model: "e"})
		if _, err := e.Embed(ctx, []string{"a"}); err != nil {
			t.Fatal(err)
		}
		srv.Script(modeltest.Rule{Path: "/api/embed", Action: modeltest.Action{Dim: 5}})
		if _, err := e.Embed(ctx, []string{"b"}); err == nil || !strings.Contains(err.Error(), "has 5 dimensions, want 4") {
			t.Errorf("Embed: got %v, want a dimension failure", err)
		}
		if _, err := e.Query(ctx, "q"); err == nil || !strings.Contains(err.Error(), "has 5 dimensions, want 4") {
			t.Errorf("Query: got %v, want a dimension failure", err)
		}
	})
	t.Run("ErrSnapshotChanged", func(t *testing.T) {
		srv := modeltest.New(t, modeltest.Ollama, modeltest.Model{Name: "e", Digest: "old", Dim: 4})
		e := live(t, encoder.Config{URL: srv.URL, Model: "e"})
		gate := make(chan struct{})
		srv.Script(modeltest.Rule{Path: "/api/embed", Times: 1, Action: modeltest.Action{Gate: gate}})
		errc := make(chan error)
		go func() {
			_, err := e.Embed(ctx, []string{"a"})
			errc <- err
		}()
		srv.WaitPending(t, "/api/embed", 1)
		srv.SetModels(modeltest.Model{Name: "e", Digest: "new", Dim: 6}) // re-pulled mid-batch
		close(gate)
		if err := <-errc; !errors.Is(err, encoder.ErrSnapshotChanged) {
			t.Fatalf("Embed: got %v, want ErrSnapshotChanged", err)
		}
		if got := e.Snapshot(); got != "new" {
			t.Errorf("Snapshot: got %q, want new", got)
		}
		batch, err := e.Embed(ctx, []string{"a"})
		if err != nil || batch.Snapshot != "new" || len(batch.Vectors[0]) != 6 {
			t.Fatalf("Embed again: got %q %d dims, %v; want the new snapshot at its own dimension", batch.Snapshot, len(batch.Vectors[0]), err)
		}
	})
	t.Run("ErrDown", func(t *testing.T) {
		srv := modeltest.New(t, modeltest.Ollama, modeltest.Model{Name: "e", Dim: 4})
		e := newEncoder(t, encoder.Config{URL: srv.URL, Model: "e"})
		if _, err := e.Embed(ctx, []string{"a"}); !errors.Is(err, encoder.ErrDown) {
			t.Fatalf("Embed before the first probe: got %v, want ErrDown", err)
		}
		e.Poll(ctx)
		srv.Down()
		if _, err := e.Embed(ctx, []string{"a"}); !wire.NoAnswer(err) {
			t.Fatalf("Embed: got %v, want no answer", err)
		}
		if e.Live() {
			t.Errorf("Live after a refused call: got true")
		}
		srv.Up(t)
		if _, err := e.Embed(ctx, []string{"a"}); !errors.Is(err, encoder.ErrDown) {
			t.Errorf("Embed while marked down: got %v, want ErrDown until the next probe", err)
		}
		if n := srv.Count("/api/embed") + srv.Count("/api/tags"); n != 1 {
			t.Errorf("requests: got %d, want 1 (the probe)", n)
		}
	})
	t.Run("ErrNotConfigured", func(t *testing.T) {
		e := newEncoder(t, encoder.FromOptions(options.Default()))
		if e.Configured() {
			t.Fatal("Configured with no embed_url")
		}
		e.Poll(ctx)
		if _, err := e.Embed(ctx, []string{"a"}); !errors.Is(err, encoder.ErrNotConfigured) {
			t.Errorf("Embed: got %v", err)
		}
		if _, err := e.Query(ctx, "a"); !errors.Is(err, encoder.ErrNotConfigured) {
			t.Errorf("Query: got %v", err)
		}
		for _, cfg := range []encoder.Config{{URL: "file:///x", Model: "m"}, {URL: "http://h:1"}, {URL: "http://h:1", Model: "m", Dim: -1}} {
			if _, err := encoder.New(cfg); err == nil {
				t.Errorf("New(%+v): got nil, want an error", cfg)
			}
		}
	})
}

func TestEncoder_Query(t *testing.T) {
	t.Parallel()
	t.Run("OK", func(t *testing.T) {
		for _, f := range []modeltest.Flavor{modeltest.Ollama, modeltest.LlamaServer, modeltest.LlamaSwap} {
			t.Run(f.String(), func(t *testing.T) {
				srv := modeltest.New(t, f, modeltest.Model{Name: "qwen3-emb-0.6b", Path: "/m/e.gguf", Dim: 8})
				e := live(t, encoder.Config{URL: srv.URL})
				batch, err := e.Embed(ctx, []string{"r"})
				if err != nil {
					t.Fatal(err)
				}
				v, err := e.Query(ctx, "how do we retry webhooks")
				if err != nil {
					t.Fatalf("Query: %v", err)
				}
				want := encoder.QueryText("how do we retry webhooks")
				sameVector(t, "query", v.Values, modeltest.Vector(want, 8))
				if v.Model != "qwen3-emb-0.6b" || v.Snapshot != batch.Snapshot {
					t.Errorf("Query: model %q snapshot %q, want the batch's %q", v.Model, v.Snapshot, batch.Snapshot)
				}
				in := inputs(t, srv)
				if got := in[len(in)-1]; len(got) != 1 || got[0] != want {
					t.Errorf("query sent: got %q, want %q", got, want)
				}
			})
		}
	})
	// A snapshot read without a batch (the embedder's first pass, with
	// nothing to embed) keys the query vectors as a batch's read does.
	t.Run("OKSnapshotRead", func(t *testing.T) {
		for _, f := range []modeltest.Flavor{modeltest.Ollama, modeltest.LlamaServer, modeltest.LlamaSwap} {
			t.Run(f.String(), func(t *testing.T) {
				srv := modeltest.New(t, f, modeltest.Model{Name: "qwen3-emb-0.6b", Path: "/m/e.gguf", Digest: "sha256:1", Dim: 8})
				e := live(t, encoder.Config{URL: srv.URL})
				s, err := e.ReadSnapshot(ctx)
				if err != nil || s == "" {
					t.Fatalf("ReadSnapshot = %q, %v", s, err)
				}
				if got := e.Snapshot(); got != s {
					t.Errorf("Snapshot after ReadSnapshot: %q, want %q", got, s)
				}
				v, err := e.Query(ctx, "q")
				if err != nil || v.Snapshot != s {
					t.Errorf("Query: snapshot %q, %v; want %q", v.Snapshot, err, s)
				}
			})
		}
	})
	t.Run("ErrDownNotCalled", func(t *testing.T) {
		srv := modeltest.New(t, modeltest.LlamaServer, modeltest.Model{Path: "/m/e.gguf", Dim: 8})
		e := newEncoder(t, encoder.Config{URL: srv.URL})
		if _, err := e.Query(ctx, "q"); !errors.Is(err, encoder.ErrDown) {
			t.Errorf("Query before any probe: got %v, want ErrDown", err)
		}
		srv.Down()
		e.Poll(ctx)
		if _, err := e.Query(ctx, "q"); !errors.Is(err, encoder.ErrDown) {
			t.Errorf("Query after a refused probe: got %v, want ErrDown", err)
		}
		if n := srv.Count("/v1/embeddings"); n != 0 {
			t.Errorf("embedding requests: got %d, want 0", n)
		}
	})
	t.Run("ErrTimeout", func(t *testing.T) {
		srv := modeltest.New(t, modeltest.LlamaServer, modeltest.Model{Path: "/m/e.gguf", Dim: 8})
		srv.Script(modeltest.Rule{Path: "/v1/embeddings", Action: modeltest.Action{Hang: true}})
		e := live(t, encoder.Config{URL: srv.URL, Timeout: 50 * time.Millisecond})
		_, err := e.Query(ctx, "q")
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Query: got %v, want the embed timeout", err)
		}
		if e.Live() {
			t.Errorf("Live after a query timed out: got true, want down until the next probe")
		}
	})
}

func TestEncoder_Poll(t *testing.T) {
	t.Parallel()
	clk := &clock{t: time.Date(2026, 11, 3, 12, 0, 0, 0, time.UTC)}
	srv := modeltest.New(t, modeltest.LlamaServer, modeltest.Model{Path: "/m/e.gguf", Dim: 8})
	e := newEncoder(t, encoder.Config{URL: srv.URL, Now: clk.Now})
	if st := e.Status(); st.Live || st.Probed {
		t.Errorf("before a probe: %+v, want not live, not probed", st)
	}
	e.Poll(ctx)
	clk.Add(encoder.DefaultProbeEvery - time.Millisecond)
	e.Poll(ctx)
	if got := srv.Count("/v1/models"); got != 1 {
		t.Errorf("probes within 30 s: got %d, want 1", got)
	}
	clk.Add(time.Millisecond)
	srv.Down()
	e.Poll(ctx)
	if got := e.Status(); got.Live || !got.LastProbe.Equal(clk.Now()) || !strings.Contains(got.ProbeError, "no answer") {
		t.Errorf("after a refused probe at 30 s: %+v", got)
	}
	srv.Up(t)
	clk.Add(encoder.DefaultProbeEvery)
	e.Poll(ctx)
	if got := srv.Count("/v1/models"); got != 2 || !e.Live() {
		t.Errorf("after 60 s: %d probes answered, live %v; want 2, live", got, e.Live())
	}
	if got := srv.Count("/v1/embeddings"); got != 0 {
		t.Errorf("embedding requests from probes: got %d, want 0", got)
	}
}

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/hearth-memory/hearth/server/encoder"
	"github.com/hearth-memory/hearth/server/models/modeltest"
	"github.com/hearth-memory/hearth/server/options"
	"github.com/hearth-memory/hearth/storage/testwait"
)

// encoderStatus reads memory_status's encoder object.
func encoderStatus(tb testing.TB, tr transport, tok string) map[string]any {
	tb.Helper()
	r := tr.call(tb, tok, "memory_status", map[string]any{})
	if !r.ok {
		tb.Fatalf("memory_status: %v", r)
	}
	enc, _ := r.body["encoder"].(map[string]any)
	return enc
}

func encNum(v any) int {
	f, _ := v.(float64)
	return int(f)
}

// TestDaemon_Encoder runs embedding retrieval through each transport
// against one daemon whose embed_url is a llama-server test encoder:
// vectors made in the background, fusion with cosine on hits, cosine alone
// by name, memory_status, forget dropping the vector, a secret query never
// sent, and the refusals of the ranking argument (R-K3, R-K4, R-M8..R-M10,
// R-S5).
func TestDaemon_Encoder(t *testing.T) {
	t.Parallel()
	const dim = 32
	srv := modeltest.New(t, modeltest.LlamaServer, modeltest.Model{Path: "/models/emb-v1.gguf", Dim: dim})
	opts := testOptions()
	opts.EmbedURL, opts.EmbedModel = srv.URL, "qwen3-emb-0.6b"
	td := startDaemon(t, opts)
	tok := td.tokens["claude-code"]

	for _, tr := range transports(td) {
		t.Run(tr.name(), func(t *testing.T) {
			ns := "projects/enc-" + tr.name()
			titles := []string{"retry webhooks with backoff", "webhooks deliver events", "cache invalidation on write"}
			ids := map[string]string{}
			for _, title := range titles {
				r := tr.call(t, tok, "memory_store", storeArgs(ns, title, title+" in "+ns))
				if !r.ok {
					t.Fatalf("store: %v", r)
				}
				rec := r.body["record"].(map[string]any)
				ids[rec["id"].(string)] = title
			}
			// Until the vector index has loaded, memory_status leaves the
			// counts out (TestDaemon_EncoderDownFromStart): the stores' own
			// vectors must be counted current, and none missing or stale.
			testwait.WaitFor(t, "the vectors", func() bool {
				st := encoderStatus(t, tr, tok)
				_, counted := st["vectors_missing"]
				return st["live"] == true && encNum(st["vectors_current"]) >= len(titles) &&
					counted && encNum(st["vectors_missing"]) == 0 && encNum(st["vectors_stale"]) == 0
			})
			st := encoderStatus(t, tr, tok)
			if st["configured"] != true || st["model"] != "qwen3-emb-0.6b" || st["snapshot"] != "emb-v1.gguf" || encNum(st["dim"]) != dim {
				t.Errorf("memory_status encoder = %v", st)
			}

			query := "how do we retry webhooks"
			r := tr.call(t, tok, "memory_search", map[string]any{"query": query, "namespace": ns})
			if !r.ok || r.body["ranking"] != "rrf" {
				t.Fatalf("search: %v, want ranking rrf", r)
			}
			hits := r.body["hits"].([]any)
			if len(hits) != len(titles) {
				t.Fatalf("got %d hits, want %d", len(hits), len(titles))
			}
			q := modeltest.Vector(encoder.QueryText(query), dim)
			for _, h := range hits {
				h := h.(map[string]any)
				title := ids[h["id"].(string)]
				v := modeltest.Vector(encoder.RecordText(title, title+" in "+ns), dim)
				var want float64
				for i := range q {
					want += float64(q[i]) * float64(v[i])
				}
				want = math.Round(want*1e4) / 1e4
				if got, ok := h["cosine"].(float64); !ok || math.Abs(got-want) > 1e-9 {
					t.Errorf("%s: cosine %v, want %v (4 places)", title, h["cosine"], want)
				}
				if !strings.Contains(h["why"].(string), "cosine #") {
					t.Errorf("%s: why %q names no cosine list", title, h["why"])
				}
			}

			// min_cosine above every hit keeps none; -1 keeps all.
			r = tr.call(t, tok, "memory_search", map[string]any{"query": query, "namespace": ns, "min_cosine": 0.9999})
			if !r.ok || r.body["ranking"] != "rrf" || len(asList(r.body["hits"])) != 0 {
				t.Errorf("min_cosine 0.9999: %v, want rrf with no hits", r)
			}
			r = tr.call(t, tok, "memory_search", map[string]any{"query": query, "namespace": ns, "min_cosine": -1})
			if len(asList(r.body["hits"])) != len(titles) {
				t.Errorf("min_cosine -1: %v, want every hit", r)
			}

			// Cosine alone, asked by name; full text alone too.
			r = tr.call(t, tok, "memory_search", map[string]any{"query": query, "namespace": ns, "ranking": "cosine"})
			if !r.ok || r.body["ranking"] != "cosine" || len(asList(r.body["hits"])) != len(titles) {
				t.Errorf("ranking cosine: %v", r)
			}
			r = tr.call(t, tok, "memory_search", map[string]any{"query": query, "namespace": ns, "ranking": "fts"})
			if !r.ok || r.body["ranking"] != "fts" {
				t.Errorf("ranking fts: %v", r)
			}
			for _, h := range asList(r.body["hits"]) {
				if _, ok := h.(map[string]any)["cosine"]; ok {
					t.Errorf("an fts hit carries cosine: %v", h)
				}
			}
			r = tr.call(t, tok, "memory_search", map[string]any{"query": query, "namespace": ns, "ranking": "bm25"})
			if r.ok || r.code != "INVALID_ARGUMENT" || !strings.Contains(string(r.raw), "ranking") {
				t.Errorf("ranking bm25: %v, want INVALID_ARGUMENT naming ranking", r)
			}

			// A secret query ranks by full text and never reaches the encoder.
			secret := "ghp_" + strings.Repeat("Z9y8X7w6V5", 4)[:36]
			before := len(srv.Requests())
			r = tr.call(t, tok, "memory_search", map[string]any{"query": "webhooks " + secret, "namespace": ns})
			if !r.ok || r.body["ranking"] != "fts" {
				t.Errorf("secret query: %v, want fts", r)
			}
			r = tr.call(t, tok, "memory_search", map[string]any{"query": "webhooks " + secret, "namespace": ns, "ranking": "cosine"})
			if r.ok || r.code != "FAILED_PRECONDITION" || strings.Contains(string(r.raw), secret) {
				t.Errorf("secret query, cosine alone: %v, want FAILED_PRECONDITION without the secret", r)
			}
			for _, req := range srv.Requests()[before:] {
				if strings.Contains(string(req.Body), "ghp_") {
					t.Errorf("the secret reached the encoder: %s", req.Body)
				}
			}

			// A context packet ranks through the same pipeline: its task is
			// embedded as a query.
			task := "change the webhook retry policy " + tr.name()
			if r := tr.call(t, tok, "memory_context", map[string]any{"task": task, "namespace": ns}); !r.ok {
				t.Fatalf("context: %v", r)
			}
			if !sentToEncoder(srv, encoder.QueryText(task)) {
				t.Errorf("the context task was not embedded as a query")
			}

			// Forget drops the vector: one live record fewer, none stale.
			var gone string
			for id := range ids {
				gone = id
				break
			}
			if r := tr.call(t, tok, "memory_forget", map[string]any{"id": gone}); !r.ok {
				t.Fatalf("forget: %v", r)
			}
			if got := td.embeddingRows(t, gone); got != 0 {
				t.Errorf("forgotten record keeps %d vector rows", got)
			}
		})
	}

	t.Run("EncoderDown", func(t *testing.T) {
		srv.Down()
		for _, tr := range transports(td) {
			// The first search finds the encoder not answering and falls back;
			// from then on it is down until a probe answers.
			r := tr.call(t, tok, "memory_search", map[string]any{"query": "webhooks", "namespace": "projects/enc-rest"})
			if !r.ok || r.body["ranking"] != "fts" {
				t.Errorf("%s: search with the encoder down: %v, want fts", tr.name(), r)
			}
			r = tr.call(t, tok, "memory_search", map[string]any{"query": "webhooks", "namespace": "projects/enc-rest", "ranking": "cosine"})
			if r.ok || r.code != "FAILED_PRECONDITION" || r.http != 400 {
				t.Errorf("%s: cosine alone with the encoder down: %v, want FAILED_PRECONDITION (400)", tr.name(), r)
			}
			// Under full text min_cosine drops nothing (no hit has a cosine):
			// a recall hook still recalls without an encoder.
			r = tr.call(t, tok, "memory_search", map[string]any{"query": "webhooks", "namespace": "projects/enc-rest", "min_cosine": 0.99})
			if !r.ok || r.body["ranking"] != "fts" || len(asList(r.body["hits"])) == 0 {
				t.Errorf("%s: min_cosine under fts: %v, want fts hits", tr.name(), r)
			}
		}
		if st := encoderStatus(t, restTransport{td}, tok); st["live"] != false {
			t.Errorf("memory_status encoder live = %v, want false", st["live"])
		}
	})
}

// TestDaemon_EncoderDownFromStart holds what memory_status and /metrics
// say of the record vectors while the vector index cannot tell their
// states: the encoder has never answered a probe, so no model and snapshot
// say which vectors are current. Through every transport the three counts
// are absent, not zero (a page or a script would read "none missing"), and
// /metrics has the encoder's gauge but no vector series.
func TestDaemon_EncoderDownFromStart(t *testing.T) {
	t.Parallel()
	srv := modeltest.New(t, modeltest.LlamaServer, modeltest.Model{Path: "/models/emb-v1.gguf", Dim: 8})
	srv.Down()
	opts := testOptions()
	opts.EmbedURL, opts.EmbedModel = srv.URL, "qwen3-emb-0.6b"
	grantAdmin(&opts, "claude-code")
	td := startDaemon(t, opts)
	tok := td.tokens["claude-code"]
	if r := (restTransport{td}).call(t, tok, "memory_store", storeArgs("projects/enc-down", "no vector yet", "stored while the encoder is down")); !r.ok {
		t.Fatalf("store: %v", r)
	}
	for _, tr := range transports(td) {
		st := encoderStatus(t, tr, tok)
		if st["configured"] != true || st["live"] != false {
			t.Errorf("%s: memory_status encoder = %v, want configured, not live", tr.name(), st)
		}
		for _, k := range []string{"vectors_current", "vectors_stale", "vectors_missing"} {
			if v, ok := st[k]; ok {
				t.Errorf("%s: memory_status encoder has %s = %v before the vector index could count", tr.name(), k, v)
			}
		}
	}
	code, _, text := scrape(t, td, tok)
	if code != 200 {
		t.Fatalf("scrape: %d %s", code, text)
	}
	fams := parseMetrics(t, text)
	if v, ok := sample(fams, "hearth_encoder_up", nil); !ok || v != 0 {
		t.Errorf("hearth_encoder_up = %v (present %v), want 0", v, ok)
	}
	if f := fams["hearth_record_vectors"]; len(f.GetMetric()) != 0 {
		t.Errorf("hearth_record_vectors has %d series before the vector index could count", len(f.GetMetric()))
	}
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

// sentToEncoder reports whether an embedding request carried text.
func sentToEncoder(srv *modeltest.Server, text string) bool {
	for _, r := range srv.Requests() {
		var body struct{ Input []string }
		if json.Unmarshal(r.Body, &body) != nil {
			continue
		}
		for _, in := range body.Input {
			if in == text {
				return true
			}
		}
	}
	return false
}

// embeddingRows counts the vector rows of record id.
func (td *testDaemon) embeddingRows(tb testing.TB, id string) int {
	tb.Helper()
	got, err := td.db.Embeddings(context.Background(), []string{id})
	if err != nil {
		tb.Fatal(fmt.Errorf("embeddings: %w", err))
	}
	return len(got)
}

// TestOpenEncoder_IndexDims: embed_index_dims reaches the vector index
// the daemon makes with its encoder.
func TestOpenEncoder_IndexDims(t *testing.T) {
	t.Parallel()
	for _, dims := range []int{0, 256} {
		opts := options.Default()
		opts.EmbedURL, opts.EmbedIndexDims = "http://127.0.0.1:9/v1", dims
		d := &Daemon{Config: Config{Options: opts}}
		_, idx, err := d.openEncoder()
		if err != nil || idx == nil {
			t.Fatalf("embed_index_dims %d: index %v, %v", dims, idx, err)
		}
		if got := idx.Dims(); got != dims {
			t.Errorf("embed_index_dims %d: the index codes %d coordinates", dims, got)
		}
	}
}

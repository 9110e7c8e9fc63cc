package page

import (
	"strings"
	"testing"

	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
)

func TestHandler_Encoder(t *testing.T) {
	t.Parallel()
	t.Run("OKLive", func(t *testing.T) {
		a := baseAnswers()
		a.status.Encoder = &hearthv1.EncoderStatus{Configured: true, Live: true, Url: "http://10.0.0.5:8080/v1",
			Model: "qwen3-emb-0.6b", Snapshot: "Qwen3-Embedding-0.6B-Q8_0.gguf", Dim: 1024,
			VectorsCurrent: proto.Uint32(12), VectorsStale: proto.Uint32(3), VectorsMissing: proto.Uint32(1), LastProbe: timestamppb.New(testNow)}
		r, _ := render(t, a, Config{EmbedURL: "http://10.0.0.5:8080/v1", EmbedModel: "qwen3-emb-0.6b"})
		wantContains(t, r.html, `id="encoder-state">live`, `id="encoder-snapshot">Qwen3-Embedding-0.6B-Q8_0.gguf`,
			`id="encoder-vectors">12 current · 3 stale · 1 missing`, "<title>12 current</title>", "<title>3 stale</title>",
			"until the worker embeds it")
		checkSelfContained(t, r.html)
	})
	t.Run("OKDown", func(t *testing.T) {
		a := baseAnswers()
		a.status.Encoder = &hearthv1.EncoderStatus{Configured: true, Model: "qwen3-emb-0.6b", Error: "connection refused",
			LastProbe: timestamppb.New(testNow)}
		r, _ := render(t, a, Config{EmbedURL: "http://10.0.0.5:8080/v1", EmbedModel: "qwen3-emb-0.6b"})
		wantContains(t, r.html, `id="encoder-state">down`, "connection refused", `id="encoder-snapshot">not read yet`,
			"Search ranks by full text until the encoder answers", `id="encoder-vectors">not counted yet`)
		if strings.Contains(r.html, "0 missing") {
			t.Errorf("vectors the status did not count are drawn as counted")
		}
	})
	t.Run("OKLiveNoneYet", func(t *testing.T) {
		// Counted, all zero (no live record): numbers, not "not counted".
		a := baseAnswers()
		a.status.Encoder = &hearthv1.EncoderStatus{Configured: true, Live: true, Model: "qwen3-emb-0.6b",
			VectorsCurrent: proto.Uint32(0), VectorsStale: proto.Uint32(0), VectorsMissing: proto.Uint32(0), LastProbe: timestamppb.New(testNow)}
		r, _ := render(t, a, Config{EmbedURL: "http://10.0.0.5:8080/v1", EmbedModel: "qwen3-emb-0.6b"})
		wantContains(t, r.html, `id="encoder-vectors">0 current · 0 stale · 0 missing`)
	})
	t.Run("OKNotConfigured", func(t *testing.T) {
		r, _ := render(t, baseAnswers(), Config{})
		if strings.Contains(r.html, `id="encoder-state"`) {
			t.Errorf("the encoder panel is drawn without an encoder")
		}
	})
}

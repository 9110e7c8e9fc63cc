package page

import (
	"strings"
	"testing"

	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
	"google.golang.org/protobuf/types/known/timestamppb"
)

func TestHandler_Encoder(t *testing.T) {
	t.Run("OKLive", func(t *testing.T) {
		a := baseAnswers()
		a.status.Encoder = &hearthv1.EncoderStatus{Configured: true, Live: true, Url: "http://10.0.0.5:8080/v1",
			Model: "qwen3-emb-0.6b", Snapshot: "Qwen3-Embedding-0.6B-Q8_0.gguf", Dim: 1024,
			VectorsCurrent: 12, VectorsStale: 3, VectorsMissing: 1, LastProbe: timestamppb.New(testNow)}
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
			"Search ranks by full text until the encoder answers")
	})
	t.Run("OKNotConfigured", func(t *testing.T) {
		r, _ := render(t, baseAnswers(), Config{})
		if strings.Contains(r.html, `id="encoder-state"`) {
			t.Errorf("the encoder panel is drawn without an encoder")
		}
	})
}

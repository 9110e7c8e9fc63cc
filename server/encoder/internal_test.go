package encoder

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/hearth-memory/hearth/server/models/modeltest"
)

// FuzzDecodeEmbeddings holds that no reply body makes the decoders panic
// and that every vector they and checkVectors accept is finite, of one
// dimension and unit length.
func FuzzDecodeEmbeddings(f *testing.F) {
	for _, s := range []string{
		`{"model":"e","embeddings":[[0.1,-0.2,0.3],[1,0,0]]}`,
		`{"model":"e","object":"list","data":[{"embedding":[0.5,0.5],"index":1,"object":"embedding"},{"embedding":[1,0],"index":0}]}`,
		`{"embeddings":[[null,1]]}`, `{"embeddings":[[1e39]]}`, `{"embeddings":[["1"]]}`, `{"embeddings":[[[1]]]}`,
		`{"data":[{"embedding":[1],"index":-1}]}`, `{"embeddings":[[ 1 , 2 ]]}`, `{"embeddings":[[]]}`, `{"embeddings":null}`,
	} {
		f.Add([]byte(s), 2)
	}
	f.Fuzz(func(t *testing.T, b []byte, n int) {
		n = max(0, min(n, 4))
		for _, decode := range []func([]byte, int) ([][]float32, error){decodeOllamaEmbeddings, decodeOpenAIEmbeddings} {
			vecs, err := decode(b, n)
			if err != nil {
				continue
			}
			if len(vecs) != n {
				t.Fatalf("%d vectors for %d texts accepted", len(vecs), n)
			}
			if checkVectors(vecs, 0) != nil {
				continue
			}
			for _, v := range vecs {
				if len(v) != len(vecs[0]) {
					t.Fatalf("mixed dimensions accepted: %v", vecs)
				}
				var sum float64
				for _, x := range v {
					if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
						t.Fatalf("non-finite value accepted: %v", v)
					}
					sum += float64(x) * float64(x)
				}
				if math.Abs(sum-1) > 1e-4 {
					t.Fatalf("vector of squared norm %v accepted", sum)
				}
			}
		}
	})
}

// FuzzSnapshot holds that no model list makes the snapshot readers panic
// and that a snapshot they give is one non-empty path segment.
func FuzzSnapshot(f *testing.F) {
	for _, s := range []string{
		`{"object":"list","data":[{"id":"/models/Qwen3-Embedding-0.6B-Q8_0.gguf","object":"model","owned_by":"llamacpp"}]}`,
		`{"data":[{"id":"Qwen/Qwen3-Embedding-0.6B","root":"/hf/snapshots/c54f2e6e/","owned_by":"vllm"}]}`,
		`{"data":[{"id":"emb","owned_by":"llama-swap"}]}`, `{"data":[{"id":"C:\\models\\e.gguf"}]}`, `{"data":[{"id":"/"}]}`,
		`{"models":[{"name":"qwen3-embedding:0.6b","digest":"ac6da0dfba84"}]}`, `{"data":null}`, `[]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		decodeTags(b)
		list, err := decodeModelList(b)
		if err != nil {
			return
		}
		for _, m := range list {
			s, err := snapshotOf(m)
			if err == nil && (s == "" || strings.ContainsAny(s, `/\`)) {
				t.Fatalf("snapshotOf(%+v) = %q", m, s)
			}
		}
	})
}

func TestLastSegment(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"/models/Qwen3-Embedding-0.6B-Q8_0.gguf": "Qwen3-Embedding-0.6B-Q8_0.gguf",
		"/hf/snapshots/c54f2e6e/":                "c54f2e6e",
		`C:\models\e.gguf`:                       "e.gguf",
		"qwen3-emb-0.6b":                         "qwen3-emb-0.6b",
		"/":                                      "",
		"":                                       "",
	} {
		if got := lastSegment(in); got != want {
			t.Errorf("lastSegment(%q): got %q, want %q", in, got, want)
		}
	}
}

// BenchmarkEncoder_Embed measures batch embedding (32 texts a request,
// 1024 dimensions, snapshot read before and after) against test servers
// that answer at once; records/s is the figure.
func BenchmarkEncoder_Embed(b *testing.B) {
	for _, f := range []modeltest.Flavor{modeltest.Ollama, modeltest.LlamaServer} {
		for _, n := range []int{32, 256} {
			b.Run(fmt.Sprintf("%s/%d", f, n), func(b *testing.B) {
				srv := modeltest.New(b, f, modeltest.Model{Name: "e", Path: "/m/e.gguf", Dim: 1024})
				e, err := New(Config{URL: srv.URL, Model: "e"})
				if err != nil {
					b.Fatal(err)
				}
				e.Poll(context.Background())
				texts := make([]string, n)
				for i := range texts {
					texts[i] = RecordText(fmt.Sprintf("Record %d", i), strings.Repeat("Failed deliveries retry with backoff. ", 8))
				}
				b.ReportAllocs()
				for b.Loop() {
					if _, err := e.Embed(context.Background(), texts); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "records/s")
			})
		}
	}
}

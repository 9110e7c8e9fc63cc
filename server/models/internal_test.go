package models

import (
	"context"
	"runtime"
	"strings"
	"testing"

	"github.com/hearth-memory/hearth/server/models/modeltest"
)

func TestSchema_Check(t *testing.T) {
	t.Parallel()
	s := MustSchema("verdict", `{"type":"object","required":["verdict"],"additionalProperties":false,
	  "properties":{"verdict":{"enum":["duplicate","session-state","keep"]},"of":{"type":"string","pattern":"^[0-9A-Z]{26}$"}}}`)
	for _, tc := range []struct{ name, in, want string }{
		{"OK", `{"verdict":"keep"}`, ""},
		{"OKSpaces", " {\"verdict\" : \"duplicate\", \"of\":\"01JBX0000000000000000000XX\"}\n", ""},
		{"ErrEnum", `{"verdict":"delete everything"}`, "violates schema verdict at /verdict (enum)"},
		{"ErrRequired", `{}`, "violates schema verdict at / (required)"},
		{"ErrExtra", `{"verdict":"keep","note":"x"}`, "violates schema verdict at / (additionalProperties)"},
		{"ErrPatternHidesValue", `{"verdict":"keep","of":"sk-secret-value"}`, "violates schema verdict at /of (pattern)"},
		{"ErrTwoValues", `{"verdict":"keep"}{"verdict":"keep"}`, "not one JSON value"},
		{"ErrFenced", "```json\n{\"verdict\":\"keep\"}\n```", "not one JSON value"},
		{"ErrEmpty", ``, "not one JSON value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := s.Check([]byte(tc.in))
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Check(%s): %v", tc.in, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Check(%s): got %v, want %q", tc.in, err, tc.want)
			}
			if strings.Contains(err.Error(), "secret") {
				t.Errorf("Check error echoes the reply: %v", err)
			}
		})
	}
	t.Run("ErrNewSchema", func(t *testing.T) {
		for _, tc := range []struct{ name, doc string }{
			{"bad name", `{}`}, {"n", `[]`}, {"n", `{"type":"nonsense"}`}, {"n", `{"$ref":"file:///etc/passwd"}`}, {"n", `{`},
		} {
			if _, err := NewSchema(tc.name, []byte(tc.doc)); err == nil {
				t.Errorf("NewSchema(%q, %s): got nil, want an error", tc.name, tc.doc)
			}
		}
	})
}

// FuzzDecode holds that no reply body makes a decoder panic, and that
// whatever the chat decoders accept is then checked by the schema without
// panicking either.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"model":"qwen3:8b","message":{"role":"assistant","content":"{\"verdict\":\"keep\"}"},"done":true,"done_reason":"stop"}`,
		`{"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"{}"}}]}`,
		`{"choices":[{"message":{"content":null}}]}`,
		`{"models":[{"name":"qwen3:8b","model":"qwen3:8b"}]}`,
		`{"object":"list","data":[{"id":"/models/x.gguf","object":"model"}]}`,
		`{"error":"boom"}`, "{\"model\":\"m\",\"done\":false}\n{\"done\":true}", `null`, `[]`, ``,
	} {
		f.Add([]byte(s))
	}
	s := MustSchema("verdict", `{"type":"object","required":["verdict"],"properties":{"verdict":{"enum":["keep"]}}}`)
	f.Fuzz(func(t *testing.T, b []byte) {
		if c, _, err := decodeOllamaChat(b); err == nil {
			_ = s.Check(c)
		}
		if c, _, err := decodeOpenAIChat(b); err == nil {
			_ = s.Check(c)
		}
		decodeOllamaTags(b)
		decodeOpenAIModels(b)
		_ = s.Check(b)
	})
}

// BenchmarkRouter_Choose measures the router's own work per call, choosing
// a server and accounting for the call, with 8 calls at once.
func BenchmarkRouter_Choose(b *testing.B) {
	r, err := New(Config{URL: "http://a:1", FallbackURL: "http://b:1", DirectURLs: []string{"http://c:1/v1"}, Model: "m"})
	if err != nil {
		b.Fatal(err)
	}
	b.SetParallelism(max(1, 8/runtime.GOMAXPROCS(0)))
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		tried := make([]bool, len(r.servers))
		for pb.Next() {
			clear(tried)
			i, _ := r.acquire(tried)
			if i < 0 {
				b.Error("no server")
				return
			}
			r.release(r.servers[i])
		}
	})
}

// BenchmarkRouter_Call measures one chat call's round trip against a test
// Ollama server that answers at once.
func BenchmarkRouter_Call(b *testing.B) {
	for _, f := range []modeltest.Flavor{modeltest.Ollama, modeltest.LlamaServer} {
		b.Run(f.String(), func(b *testing.B) {
			srv := modeltest.New(b, f, modeltest.Model{Name: "m", Path: "/m.gguf"})
			srv.Script(modeltest.Rule{Path: srv.ChatPath(), Action: modeltest.Action{
				Content: `{"memories":[{"type":"decision","title":"Use WAL","content":"SQLite runs in WAL mode.","confidence":0.9}]}`}})
			r, err := New(Config{URL: srv.URL, Model: "m"})
			if err != nil {
				b.Fatal(err)
			}
			schema := MustSchema("memories", `{"type":"object","required":["memories"],"properties":{"memories":{"type":"array","items":{
			  "type":"object","required":["type","title","content","confidence"],"properties":{"type":{"type":"string"},
			  "title":{"type":"string"},"content":{"type":"string"},"confidence":{"type":"number"}}}}}}`)
			req := Request{Kind: Extraction, System: System("Extract memories."),
				User: Fence("notes", strings.Repeat("We decided to run SQLite in WAL mode. ", 50)), Schema: schema}
			var out struct{ Memories []map[string]any }
			b.ReportAllocs()
			for b.Loop() {
				if _, err := r.Call(context.Background(), req, &out); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

package modeltest_test

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hearth-memory/hearth/server/models/modeltest"
)

// call sends one request and returns the status, Content-Type and body.
func call(t *testing.T, method, url, contentType, body string) (int, string, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
}

func wantJSON(t *testing.T, what, got, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		t.Fatalf("%s: got %q, not JSON: %v", what, got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	gb, _ := json.Marshal(g)
	wb, _ := json.Marshal(w)
	if !bytes.Equal(gb, wb) {
		t.Errorf("%s:\n got %s\nwant %s", what, gb, wb)
	}
}

const json200 = "application/json"

func TestServer_Ollama(t *testing.T) {
	t.Parallel()
	srv := modeltest.New(t, modeltest.Ollama, modeltest.Model{Name: "qwen3:8b", Digest: "0a8c"}, modeltest.Model{Name: "qwen3-embedding", Dim: 4})

	t.Run("OK", func(t *testing.T) {
		if code, _, body := call(t, "GET", srv.Root+"/", "", ""); code != 200 || body != "Ollama is running" {
			t.Errorf("GET /: got %d %q", code, body)
		}
		code, _, body := call(t, "GET", srv.URL+"/api/tags", "", "")
		if code != 200 {
			t.Fatalf("tags: got %d", code)
		}
		var tags struct {
			Models []struct{ Name, Model, Digest string }
		}
		json.Unmarshal([]byte(body), &tags)
		if len(tags.Models) != 2 || tags.Models[0].Name != "qwen3:8b" || tags.Models[0].Digest != "0a8c" || tags.Models[1].Model != "qwen3-embedding:latest" {
			t.Errorf("tags: got %s", body)
		}
		code, ct, body := call(t, "POST", srv.URL+"/api/chat", json200,
			`{"model":"qwen3:8b","messages":[{"role":"user","content":"hi"}],"stream":false,"think":false,`+
				`"format":{"type":"object","properties":{"verdict":{"enum":["keep","duplicate"]}},"required":["verdict"]}}`)
		if code != 200 || !strings.HasPrefix(ct, "application/json") {
			t.Fatalf("chat: got %d %s %s", code, ct, body)
		}
		var chat struct {
			Model   string
			Message struct{ Role, Content string }
			Done    bool
			Reason  string `json:"done_reason"`
		}
		json.Unmarshal([]byte(body), &chat)
		if chat.Model != "qwen3:8b" || chat.Message.Role != "assistant" || chat.Message.Content != `{"verdict":"keep"}` || !chat.Done || chat.Reason != "stop" {
			t.Errorf("chat: got %s", body)
		}
		code, _, body = call(t, "POST", srv.URL+"/api/embed", json200, `{"model":"qwen3-embedding","input":["a","b"]}`)
		var emb struct {
			Model      string
			Embeddings [][]float32
		}
		json.Unmarshal([]byte(body), &emb)
		if code != 200 || emb.Model != "qwen3-embedding" || len(emb.Embeddings) != 2 || len(emb.Embeddings[0]) != 4 {
			t.Fatalf("embed: got %d %s", code, body)
		}
		for i, text := range []string{"a", "b"} {
			want := modeltest.Vector(text, 4)
			for j := range want {
				if emb.Embeddings[i][j] != want[j] {
					t.Errorf("embed[%d][%d]: got %v, want %v", i, j, emb.Embeddings[i][j], want[j])
				}
			}
		}
	})
	t.Run("Stream", func(t *testing.T) {
		code, ct, body := call(t, "POST", srv.URL+"/api/chat", json200, `{"model":"qwen3:8b","messages":[]}`)
		lines := strings.Split(strings.TrimSpace(body), "\n")
		if code != 200 || ct != "application/x-ndjson" || len(lines) != 2 || !strings.Contains(lines[1], `"done":true`) {
			t.Errorf("chat without stream:false: got %d %s %q, want two NDJSON lines", code, ct, body)
		}
	})
	t.Run("ErrModelNotFound", func(t *testing.T) {
		code, _, body := call(t, "POST", srv.URL+"/api/chat", json200, `{"model":"llama3","stream":false}`)
		if code != 404 || body != `{"error":"model 'llama3' not found"}`+"\n" {
			t.Errorf("chat: got %d %q", code, body)
		}
		code, _, body = call(t, "POST", srv.URL+"/api/embed", json200, `{"model":"x","input":"a"}`)
		if code != 404 || body != `{"error":"model \"x\" not found, try pulling it first"}`+"\n" {
			t.Errorf("embed: got %d %q", code, body)
		}
	})
	t.Run("ErrBadRequest", func(t *testing.T) {
		for _, tc := range []struct{ path, body, want string }{
			{"/api/chat", "", "missing request body"},
			{"/api/chat", `{"stream":false}`, "model is required"},
			{"/api/chat", `{"model":"qwen3:8b","think":"yes"}`, `invalid think value: "yes" (must be "high", "medium", "low", true, or false)`},
			{"/api/chat", `{"model":"qwen3:8b","format":"xml"}`, `invalid format: "xml"; expected "json" or a valid JSON Schema object`},
			{"/api/chat", `{"model":"qwen3:8b","keep_alive":"300"}`, `time: missing unit in duration "300"`},
			{"/api/embed", `{"model":"qwen3:8b","input":3}`, "invalid input type"},
		} {
			code, _, body := call(t, "POST", srv.URL+tc.path, json200, tc.body)
			wantJSON(t, tc.body, body, `{"error":`+string(mustJSON(tc.want))+`}`)
			if code != 400 {
				t.Errorf("%s %s: got %d, want 400", tc.path, tc.body, code)
			}
		}
	})
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

func TestServer_LlamaServer(t *testing.T) {
	t.Parallel()
	srv := modeltest.New(t, modeltest.LlamaServer, modeltest.Model{Path: "/models/Qwen3-8B-Q4_K_M.gguf", Dim: 3})

	t.Run("OK", func(t *testing.T) {
		code, _, body := call(t, "GET", srv.URL+"/models", "", "")
		var list struct {
			Object string
			Data   []map[string]any
		}
		json.Unmarshal([]byte(body), &list)
		if code != 200 || list.Object != "list" || len(list.Data) != 1 || list.Data[0]["id"] != "/models/Qwen3-8B-Q4_K_M.gguf" ||
			list.Data[0]["owned_by"] != "llamacpp" || list.Data[0]["root"] != nil {
			t.Errorf("models: got %d %s", code, body)
		}
		code, _, body = call(t, "POST", srv.URL+"/chat/completions", json200,
			`{"model":"gpt-3.5-turbo","messages":[{"role":"user","content":"x"}],"chat_template_kwargs":{"enable_thinking":false},`+
				`"response_format":{"type":"json_schema","json_schema":{"name":"m","strict":true,"schema":{"type":"object","required":["memories"],"properties":{"memories":{"type":"array"}}}}}}`)
		var chat struct {
			Object, Model string
			Choices       []struct {
				FinishReason string `json:"finish_reason"`
				Message      struct{ Role, Content string }
			}
		}
		json.Unmarshal([]byte(body), &chat)
		if code != 200 || chat.Object != "chat.completion" || chat.Model != "/models/Qwen3-8B-Q4_K_M.gguf" ||
			len(chat.Choices) != 1 || chat.Choices[0].Message.Content != `{"memories":[]}` || chat.Choices[0].FinishReason != "stop" {
			t.Errorf("chat: got %d %s", code, body)
		}
		code, _, body = call(t, "POST", srv.URL+"/embeddings", json200, `{"model":"qwen3-embedding","input":["a","b"],"encoding_format":"float"}`)
		var emb struct {
			Model, Object string
			Data          []struct {
				Embedding []float32
				Index     int
				Object    string
			}
		}
		json.Unmarshal([]byte(body), &emb)
		if code != 200 || emb.Model != "qwen3-embedding" || len(emb.Data) != 2 || emb.Data[1].Index != 1 || len(emb.Data[1].Embedding) != 3 ||
			emb.Data[1].Object != "embedding" {
			t.Errorf("embeddings: got %d %s", code, body)
		}
	})
	t.Run("ErrThinkingString", func(t *testing.T) {
		code, _, body := call(t, "POST", srv.URL+"/chat/completions", json200, `{"messages":[],"chat_template_kwargs":{"enable_thinking":"false"}}`)
		if code != 400 {
			t.Errorf("chat: got %d, want 400", code)
		}
		wantJSON(t, "chat", body, `{"error":{"code":400,"message":"invalid type for \"enable_thinking\" (expected boolean, got string)","type":"invalid_request_error"}}`)
	})
	t.Run("ErrResponseFormat", func(t *testing.T) {
		code, _, body := call(t, "POST", srv.URL+"/chat/completions", json200, `{"messages":[],"response_format":{"type":"xml"}}`)
		if code != 400 {
			t.Errorf("chat: got %d, want 400", code)
		}
		wantJSON(t, "chat", body, `{"error":{"code":400,"message":"response_format type must be one of \"text\" or \"json_object\", but got: xml","type":"invalid_request_error"}}`)
	})
	t.Run("ErrNoEmbeddings", func(t *testing.T) {
		chat := modeltest.New(t, modeltest.LlamaServer, modeltest.Model{Path: "/m/chat.gguf"})
		code, _, body := call(t, "POST", chat.URL+"/embeddings", json200, `{"input":"a"}`)
		if code != 501 {
			t.Errorf("embeddings: got %d, want 501", code)
		}
		wantJSON(t, "embeddings", body, `{"error":{"code":501,"message":"This server does not support embeddings. Start it with `+"`--embeddings`"+`","type":"not_supported_error"}}`)
	})
	t.Run("ErrLoading", func(t *testing.T) {
		srv.Script(modeltest.Rule{Path: "/v1/chat/completions", Times: 1, Action: modeltest.Action{Status: 503}})
		code, _, body := call(t, "POST", srv.URL+"/chat/completions", json200, `{}`)
		if code != 503 {
			t.Errorf("chat: got %d, want 503", code)
		}
		wantJSON(t, "chat", body, `{"error":{"code":503,"message":"Loading model","type":"unavailable_error"}}`)
	})
}

func TestServer_LlamaSwap(t *testing.T) {
	t.Parallel()
	srv := modeltest.New(t, modeltest.LlamaSwap,
		modeltest.Model{Name: "qwen3-8b", Path: "/models/Qwen3-8B-Q4_K_M.gguf"},
		modeltest.Model{Name: "emb", Path: "/models/Qwen3-Embedding-0.6B-Q8_0.gguf", Dim: 5})
	srv.SetLoadDelay(20 * time.Millisecond)

	t.Run("OK", func(t *testing.T) {
		code, _, body := call(t, "GET", srv.URL+"/models", "", "")
		var list struct{ Data []map[string]any }
		json.Unmarshal([]byte(body), &list)
		if code != 200 || len(list.Data) != 2 || list.Data[0]["id"] != "emb" || list.Data[0]["owned_by"] != "llama-swap" {
			t.Errorf("models: got %d %s", code, body)
		}
		if m, loads := srv.Loaded(); m != "" || loads != 0 {
			t.Errorf("after /v1/models: loaded %q (%d loads), want nothing loaded", m, loads)
		}
		code, _, body = call(t, "POST", srv.URL+"/chat/completions", json200, `{"model":"qwen3-8b","messages":[]}`)
		if code != 200 || !strings.Contains(body, `"model":"/models/Qwen3-8B-Q4_K_M.gguf"`) {
			t.Errorf("chat: got %d %s", code, body)
		}
		code, _, body = call(t, "GET", srv.Root+"/upstream/emb/v1/models", "", "")
		if code != 200 || !strings.Contains(body, `"id":"/models/Qwen3-Embedding-0.6B-Q8_0.gguf"`) {
			t.Errorf("upstream models: got %d %s", code, body)
		}
		if m, loads := srv.Loaded(); m != "emb" || loads != 2 {
			t.Errorf("after chat and upstream: loaded %q (%d loads), want emb after 2 loads", m, loads)
		}
	})
	t.Run("ErrUnknownModel", func(t *testing.T) {
		code, _, body := call(t, "POST", srv.URL+"/chat/completions", json200, `{"model":"nope"}`)
		if code != 404 {
			t.Errorf("chat: got %d, want 404", code)
		}
		wantJSON(t, "chat", body, `{"src":"llama-swap","error":{"message":"no router for requested model","type":"invalid_request_error","param":null,"code":"not_found"}}`)
		code, _, body = call(t, "GET", srv.Root+"/upstream/nope/v1/models", "", "")
		if code != 404 || body != "model not found" {
			t.Errorf("upstream: got %d %q", code, body)
		}
	})
	t.Run("ErrNoContentType", func(t *testing.T) {
		code, _, body := call(t, "POST", srv.URL+"/chat/completions", "text/plain", `{"model":"qwen3-8b"}`)
		if code != 404 || !strings.Contains(body, "no model id could be identified") {
			t.Errorf("chat without JSON content type: got %d %s", code, body)
		}
	})
}

func TestServer_Script(t *testing.T) {
	t.Parallel()
	srv := modeltest.New(t, modeltest.Ollama, modeltest.Model{Name: "m:1", Dim: 2})
	chat := `{"model":"m:1","stream":false}`

	t.Run("OK", func(t *testing.T) {
		srv.Script(
			modeltest.Rule{Path: "/api/chat", Times: 1, Action: modeltest.Action{Content: `{"verdict":"duplicate"}`}},
			modeltest.Rule{Path: "/api/chat", Times: 1, Action: modeltest.Action{Body: `{"message":`}},
			modeltest.Rule{Path: "/api/chat", Times: 1, Action: modeltest.Action{Status: 500, Message: "boom"}},
		)
		if _, _, body := call(t, "POST", srv.URL+"/api/chat", json200, chat); !strings.Contains(body, `"content":"{\"verdict\":\"duplicate\"}"`) {
			t.Errorf("scripted content: got %s", body)
		}
		if code, _, body := call(t, "POST", srv.URL+"/api/chat", json200, chat); code != 200 || body != `{"message":` {
			t.Errorf("scripted body: got %d %q", code, body)
		}
		if code, _, body := call(t, "POST", srv.URL+"/api/chat", json200, chat); code != 500 || body != `{"error":"boom"}`+"\n" {
			t.Errorf("scripted 500: got %d %q", code, body)
		}
		if code, _, body := call(t, "POST", srv.URL+"/api/chat", json200, chat); code != 200 || !strings.Contains(body, `"content":"{}"`) {
			t.Errorf("after the rules ran out: got %d %s", code, body)
		}
		if got := srv.Count("/api/chat"); got != 4 {
			t.Errorf("Count: got %d, want 4", got)
		}
	})
	t.Run("Embed", func(t *testing.T) {
		srv.Script(modeltest.Rule{Path: "/api/embed", Times: 1, Action: modeltest.Action{Null: true, Dim: 3, Scale: 2}})
		_, _, body := call(t, "POST", srv.URL+"/api/embed", json200, `{"model":"m:1","input":"x"}`)
		var emb struct{ Embeddings [][]*float64 }
		json.Unmarshal([]byte(body), &emb)
		if len(emb.Embeddings) != 1 || len(emb.Embeddings[0]) != 3 || emb.Embeddings[0][0] != nil ||
			math.Abs(*emb.Embeddings[0][1]-2*float64(modeltest.Vector("x", 3)[1])) > 1e-6 {
			t.Errorf("scripted embed: got %s", body)
		}
	})
	t.Run("Gate", func(t *testing.T) {
		gate := make(chan struct{})
		srv.Script(modeltest.Rule{Path: "/api/chat", Times: 1, Action: modeltest.Action{Gate: gate}})
		done := make(chan int)
		go func() {
			code, _, _ := call(t, "POST", srv.URL+"/api/chat", json200, chat)
			done <- code
		}()
		srv.WaitPending(t, "/api/chat", 1)
		close(gate)
		if code := <-done; code != 200 {
			t.Errorf("gated call: got %d, want 200", code)
		}
		srv.WaitPending(t, "/api/chat", 0)
	})
	t.Run("DownUp", func(t *testing.T) {
		srv.Down()
		if _, err := http.Get(srv.URL + "/api/tags"); err == nil || !strings.Contains(err.Error(), "connection refused") {
			t.Fatalf("down: got %v, want connection refused", err)
		}
		srv.Up(t)
		if code, _, _ := call(t, "GET", srv.URL+"/api/tags", "", ""); code != 200 {
			t.Errorf("up again: got %d", code)
		}
	})
	t.Run("HangCutByDown", func(t *testing.T) {
		srv.Script(modeltest.Rule{Path: "/api/chat", Times: 1, Action: modeltest.Action{Hang: true}})
		errc := make(chan error)
		go func() {
			_, err := http.Post(srv.URL+"/api/chat", json200, strings.NewReader(chat))
			errc <- err
		}()
		srv.WaitPending(t, "/api/chat", 1)
		srv.Down()
		if err := <-errc; err == nil {
			t.Errorf("hung call after Down: got an answer, want an error")
		}
		srv.Up(t)
	})
}

package encoder

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

// startServer serves the fixture vectors on a real TCP port for the test.
func startServer(t *testing.T) (*Server, string) {
	t.Helper()
	s := &Server{Vectors: loadFixture(t)}
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	return s, ts.URL
}

// post sends body to url as JSON and returns the status and decoded reply.
func post(t *testing.T, url, body string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return decode(t, resp)
}

func decode(t *testing.T, resp *http.Response) (int, map[string]any) {
	t.Helper()
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("Content-Type = %q, want application/json", ct)
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("reply %q is not a JSON object: %v", raw, err)
	}
	return resp.StatusCode, out
}

// reply is the OpenAI embeddings response shape.
type reply struct {
	Object string `json:"object"`
	Model  string `json:"model"`
	Data   []struct {
		Object    string          `json:"object"`
		Index     int             `json:"index"`
		Embedding json.RawMessage `json:"embedding"`
	} `json:"data"`
	Usage struct {
		PromptTokens int `json:"prompt_tokens"`
		TotalTokens  int `json:"total_tokens"`
	} `json:"usage"`
}

func embed(t *testing.T, url, body string) reply {
	t.Helper()
	resp, err := http.Post(url+"/v1/embeddings", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /v1/embeddings %s: HTTP %d %s", body, resp.StatusCode, raw)
	}
	var r reply
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatalf("reply %s: %v", raw, err)
	}
	return r
}

func floats(t *testing.T, raw json.RawMessage) []float32 {
	t.Helper()
	var v []float32
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("embedding %s is not a float array: %v", raw, err)
	}
	return v
}

func TestServer_Embeddings(t *testing.T) {
	t.Parallel()
	t.Run("OK", func(t *testing.T) {
		s, url := startServer(t)
		r := embed(t, url, `{"model":"qwen3-emb-0.6b","input":["retry backoff","kitchen"],"encoding_format":"float"}`)
		if r.Object != "list" {
			t.Errorf("object = %q, want list", r.Object)
		}
		// Like llama-server, the requested model name comes back.
		if r.Model != "qwen3-emb-0.6b" {
			t.Errorf("model = %q, want the requested qwen3-emb-0.6b", r.Model)
		}
		if len(r.Data) != 2 {
			t.Fatalf("data has %d items, want 2", len(r.Data))
		}
		c := float32(1 / math.Sqrt2)
		for i, want := range [][]float32{{c, c, 0, 0}, {0, 0, 1, 0}} {
			d := r.Data[i]
			if d.Object != "embedding" || d.Index != i {
				t.Errorf("data[%d] object %q index %d, want embedding %d", i, d.Object, d.Index, i)
			}
			if got := floats(t, d.Embedding); !near(got, want) {
				t.Errorf("data[%d].embedding = %v, want %v", i, got, want)
			}
		}
		if r.Usage.PromptTokens != 3 || r.Usage.TotalTokens != 3 {
			t.Errorf("usage = %+v, want 3 prompt and 3 total tokens", r.Usage)
		}
		if got, want := s.Inputs(), []string{"retry backoff", "kitchen"}; !slices.Equal(got, want) {
			t.Errorf("Inputs() = %q, want %q", got, want)
		}
		if got := s.Requests(); got != 1 {
			t.Errorf("Requests() = %d, want 1", got)
		}
	})
	t.Run("OKString", func(t *testing.T) {
		_, url := startServer(t)
		r := embed(t, url, `{"input":"kitchen"}`)
		if r.Model != DefaultModel {
			t.Errorf("model = %q, want %q when the request names none", r.Model, DefaultModel)
		}
		if len(r.Data) != 1 || !near(floats(t, r.Data[0].Embedding), []float32{0, 0, 1, 0}) {
			t.Errorf("data = %+v, want one vector [0 0 1 0]", r.Data)
		}
	})
	t.Run("OKBase64", func(t *testing.T) {
		_, url := startServer(t)
		r := embed(t, url, `{"input":["webhook"],"encoding_format":"base64"}`)
		var s string
		if err := json.Unmarshal(r.Data[0].Embedding, &s); err != nil {
			t.Fatalf("base64 embedding %s is not a string", r.Data[0].Embedding)
		}
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil || len(b) != 16 {
			t.Fatalf("embedding %q: %d bytes, err %v; want 16 bytes", s, len(b), err)
		}
		got := make([]float32, 4)
		for i := range got {
			got[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
		if want := []float32{0.6, 0.8, 0, 0}; !near(got, want) {
			t.Errorf("decoded embedding = %v, want %v", got, want)
		}
	})
	t.Run("OKDimensions", func(t *testing.T) {
		_, url := startServer(t)
		r := embed(t, url, `{"input":"light","dimensions":3}`)
		// light is [0,0,1,1]: cut to [0,0,1], then unit length again.
		if got, want := floats(t, r.Data[0].Embedding), []float32{0, 0, 1}; !near(got, want) {
			t.Errorf("embedding = %v, want %v", got, want)
		}
	})
	for _, tc := range []struct {
		name, body string
		status     int
		want       string
	}{
		{"ErrNotJSON", `input=x`, 400, "not a JSON object"},
		{"ErrNoInput", `{"model":"m"}`, 400, `"input" is required`},
		{"ErrEmptyString", `{"input":""}`, 400, `"input" must not be empty`},
		{"ErrEmptyList", `{"input":[]}`, 400, `"input" must not be empty`},
		{"ErrEmptyItem", `{"input":["a",""]}`, 400, `"input[1]" must not be empty`},
		{"ErrTokens", `{"input":[[1,2,3]]}`, 400, "token arrays are not supported"},
		{"ErrNumber", `{"input":5}`, 400, "must be a string or an array"},
		{"ErrFormat", `{"input":"a","encoding_format":"int8"}`, 400, `"encoding_format"`},
		{"ErrDimensionsZero", `{"input":"a","dimensions":0}`, 400, `"dimensions" must be 1 to 4`},
		{"ErrDimensionsLarge", `{"input":"a","dimensions":5}`, 400, `"dimensions" must be 1 to 4`},
		{"ErrTooMany", `{"input":[` + strings.Repeat(`"a",`, MaxInputs) + `"a"]}`, 400, "at most 2048"},
		{"ErrTooLarge", `{"input":"` + strings.Repeat("a", MaxBodyBytes) + `"}`, 413, "larger than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, url := startServer(t)
			status, body := post(t, url+"/v1/embeddings", tc.body)
			if status != tc.status {
				t.Errorf("status = %d, want %d", status, tc.status)
			}
			checkError(t, body, tc.status, tc.want)
			if got := s.Inputs(); len(got) != 0 {
				t.Errorf("a refused request logged inputs %q", got)
			}
		})
	}
	t.Run("ErrMethod", func(t *testing.T) {
		_, url := startServer(t)
		resp, err := http.Get(url + "/v1/embeddings")
		if err != nil {
			t.Fatal(err)
		}
		status, body := decode(t, resp)
		if status != http.StatusMethodNotAllowed {
			t.Errorf("GET /v1/embeddings status = %d, want 405", status)
		}
		checkError(t, body, 405, "use POST")
	})
}

// checkError asserts llama-server's error shape.
func checkError(t *testing.T, body map[string]any, status int, want string) {
	t.Helper()
	e, ok := body["error"].(map[string]any)
	if !ok {
		t.Fatalf("reply %v has no error object", body)
	}
	if code, _ := e["code"].(float64); int(code) != status {
		t.Errorf("error.code = %v, want %d", e["code"], status)
	}
	if msg, _ := e["message"].(string); !strings.Contains(msg, want) {
		t.Errorf("error.message = %q, want it to contain %q", msg, want)
	}
	if typ, _ := e["type"].(string); typ == "" {
		t.Errorf("error.type is empty")
	}
}

func TestServer_Models(t *testing.T) {
	t.Parallel()
	t.Run("OK", func(t *testing.T) {
		s, url := startServer(t)
		s.Model = "wink-test"
		resp, err := http.Get(url + "/v1/models")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out struct {
			Object string `json:"object"`
			Data   []struct {
				ID     string `json:"id"`
				Object string `json:"object"`
				Root   string `json:"root"`
			} `json:"data"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			t.Fatal(err)
		}
		if out.Object != "list" || len(out.Data) != 1 {
			t.Fatalf("reply = %+v, want a list of one model", out)
		}
		m := out.Data[0]
		if m.ID != "wink-test" || m.Object != "model" {
			t.Errorf("model = %+v, want id wink-test, object model", m)
		}
		// Hearth takes the snapshot from the last path segment of root (R-M9).
		if want := "/models/wink-test/snapshots/" + s.Vectors.Snapshot; m.Root != want {
			t.Errorf("root = %q, want %q", m.Root, want)
		}
	})
	t.Run("ErrMethod", func(t *testing.T) {
		_, url := startServer(t)
		status, body := post(t, url+"/v1/models", `{}`)
		if status != http.StatusMethodNotAllowed {
			t.Errorf("POST /v1/models status = %d, want 405", status)
		}
		checkError(t, body, 405, "use GET")
	})
}

func TestServer_Health(t *testing.T) {
	t.Parallel()
	_, url := startServer(t)
	for path, want := range map[string]int{"/health": 200, "/v1/health": 200, "/v1/chat/completions": 404, "/": 404} {
		resp, err := http.Get(url + path)
		if err != nil {
			t.Fatal(err)
		}
		status, body := decode(t, resp)
		if status != want {
			t.Errorf("GET %s status = %d, want %d", path, status, want)
		}
		if want == 200 && body["status"] != "ok" {
			t.Errorf("GET %s = %v, want status ok", path, body)
		}
	}
}

// TestServer_Concurrent embeds from several clients at once (run with -race).
func TestServer_Concurrent(t *testing.T) {
	t.Parallel()
	s, url := startServer(t)
	errs := make(chan error, 8)
	for i := range 8 {
		go func() {
			body := fmt.Sprintf(`{"input":["retry %d","kitchen light"]}`, i)
			resp, err := http.Post(url+"/v1/embeddings", "application/json", bytes.NewBufferString(body))
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode != 200 {
					err = fmt.Errorf("HTTP %d", resp.StatusCode)
				}
			}
			errs <- err
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if got := len(s.Inputs()); got != 16 {
		t.Errorf("Inputs() has %d texts, want 16", got)
	}
}

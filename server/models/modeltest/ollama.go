package modeltest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// ollamaName is Ollama's full name of a model: ":latest" when untagged.
func ollamaName(name string) string {
	if name == "" || strings.Contains(name, ":") {
		return name
	}
	return name + ":latest"
}

func (s *Server) ollamaModel(name string) (Model, bool) {
	full := ollamaName(name)
	for _, m := range s.modelList() {
		if ollamaName(m.Name) == full {
			return m, true
		}
	}
	return Model{}, false
}

func ollamaDigest(m Model) string {
	if m.Digest != "" {
		return m.Digest
	}
	sum := sha256.Sum256([]byte(m.Name))
	return hex.EncodeToString(sum[:])
}

func (s *Server) routeOllama(w http.ResponseWriter, r *http.Request, req Request, act Action) {
	switch {
	case r.URL.Path == "/" && r.Method == http.MethodGet:
		io.WriteString(w, "Ollama is running")
	case r.URL.Path == "/api/version":
		writeJSON(w, http.StatusOK, map[string]string{"version": "0.33.0"})
	case r.URL.Path == "/api/tags" && r.Method == http.MethodGet:
		type details struct {
			ParentModel       string   `json:"parent_model"`
			Format            string   `json:"format"`
			Family            string   `json:"family"`
			Families          []string `json:"families"`
			ParameterSize     string   `json:"parameter_size"`
			QuantizationLevel string   `json:"quantization_level"`
		}
		type entry struct {
			Name       string  `json:"name"`
			Model      string  `json:"model"`
			ModifiedAt string  `json:"modified_at"`
			Size       int64   `json:"size"`
			Digest     string  `json:"digest"`
			Details    details `json:"details"`
		}
		list := []entry{}
		for _, m := range s.modelList() {
			family, _, _ := strings.Cut(m.Name, ":")
			list = append(list, entry{Name: ollamaName(m.Name), Model: ollamaName(m.Name),
				ModifiedAt: "2025-05-10T08:06:48.63-07:00", Size: 5200000000, Digest: ollamaDigest(m),
				Details: details{Format: "gguf", Family: family, Families: []string{family},
					ParameterSize: "8.2B", QuantizationLevel: "Q4_K_M"}})
		}
		writeJSON(w, http.StatusOK, map[string]any{"models": list})
	case r.URL.Path == "/api/chat" && r.Method == http.MethodPost:
		s.ollamaChat(w, req, act)
	case r.URL.Path == "/api/embed" && r.Method == http.MethodPost:
		s.ollamaEmbed(w, req, act)
	case r.URL.Path == "/api/chat" || r.URL.Path == "/api/embed" || r.URL.Path == "/api/tags":
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusMethodNotAllowed)
		io.WriteString(w, "405 method not allowed")
	default:
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, "404 page not found")
	}
}

// ollamaRequestError answers 400 {"error": msg}, as Ollama's handlers do.
func ollamaRequestError(w http.ResponseWriter, err error) {
	msg := err.Error()
	if errors.Is(err, io.EOF) {
		msg = "missing request body"
	}
	writeJSON(w, http.StatusBadRequest, map[string]string{"error": msg})
}

func (s *Server) ollamaChat(w http.ResponseWriter, req Request, act Action) {
	var in struct {
		Model     string          `json:"model"`
		Messages  []Message       `json:"messages"`
		Stream    *bool           `json:"stream"`
		Format    json.RawMessage `json:"format"`
		Think     json.RawMessage `json:"think"`
		Options   map[string]any  `json:"options"`
		KeepAlive json.RawMessage `json:"keep_alive"`
	}
	if err := decodeBody(req.Body, &in); err != nil {
		ollamaRequestError(w, err)
		return
	}
	if in.Model == "" {
		ollamaRequestError(w, errors.New("model is required"))
		return
	}
	if err := checkThink(in.Think); err != nil {
		ollamaRequestError(w, err)
		return
	}
	if err := checkKeepAlive(in.KeepAlive); err != nil {
		ollamaRequestError(w, err)
		return
	}
	schema, err := ollamaFormat(in.Format)
	if err != nil {
		ollamaRequestError(w, err)
		return
	}
	m, ok := s.ollamaModel(in.Model)
	if !ok {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": fmt.Sprintf("model '%s' not found", in.Model)})
		return
	}
	content := chatContent(act, Chat{Model: in.Model, Messages: in.Messages, Schema: schema})
	created := time.Now().UTC().Format(time.RFC3339Nano)
	final := map[string]any{"model": ollamaName(m.Name), "created_at": created,
		"message": map[string]any{"role": "assistant", "content": content}, "done": true, "done_reason": "stop",
		"total_duration": 2254970291, "load_duration": 574751416, "prompt_eval_count": 34,
		"prompt_eval_duration": 1502000000, "eval_count": 12, "eval_duration": 175000000}
	if act.PromptTokens > 0 {
		final["prompt_eval_count"] = act.PromptTokens
	}
	if act.ReplyTokens > 0 {
		final["eval_count"] = act.ReplyTokens
	}
	if act.NoUsage {
		for _, k := range []string{"total_duration", "load_duration", "prompt_eval_count", "prompt_eval_duration", "eval_count", "eval_duration"} {
			delete(final, k)
		}
	}
	if in.Stream == nil || *in.Stream {
		// Streaming is the default: NDJSON, one chunk then the final line.
		w.Header().Set("Content-Type", "application/x-ndjson")
		enc := json.NewEncoder(w)
		enc.Encode(map[string]any{"model": ollamaName(m.Name), "created_at": created,
			"message": map[string]any{"role": "assistant", "content": content}, "done": false})
		final["message"] = map[string]any{"role": "assistant", "content": ""}
		enc.Encode(final)
		return
	}
	writeJSON(w, http.StatusOK, final)
}

// checkThink accepts what Ollama's ThinkValue accepts.
func checkThink(raw json.RawMessage) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var b bool
	if json.Unmarshal(raw, &b) == nil {
		return nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		switch s {
		case "low", "medium", "high", "max":
			return nil
		}
		return fmt.Errorf("invalid think value: %q (must be \"high\", \"medium\", \"low\", true, or false)", s)
	}
	return fmt.Errorf("invalid think value: %s", raw)
}

// checkKeepAlive accepts a number of seconds or a Go duration string.
func checkKeepAlive(raw json.RawMessage) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var f float64
	if json.Unmarshal(raw, &f) == nil {
		return nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return errors.New("invalid keep_alive")
	}
	_, err := time.ParseDuration(s)
	return err
}

// ollamaFormat returns the schema of a format value: nil for unset or
// "json"; an error for anything but "json" or an object.
func ollamaFormat(raw json.RawMessage) (json.RawMessage, error) {
	if len(raw) == 0 || string(raw) == "null" || string(raw) == `""` {
		return nil, nil
	}
	if string(raw) == `"json"` {
		return nil, nil
	}
	var obj map[string]any
	if json.Unmarshal(raw, &obj) != nil {
		return nil, fmt.Errorf(`invalid format: %s; expected "json" or a valid JSON Schema object`, raw)
	}
	return raw, nil
}

func (s *Server) ollamaEmbed(w http.ResponseWriter, req Request, act Action) {
	var in struct {
		Model      string          `json:"model"`
		Input      json.RawMessage `json:"input"`
		Truncate   *bool           `json:"truncate"`
		Dimensions int             `json:"dimensions"`
		KeepAlive  json.RawMessage `json:"keep_alive"`
	}
	if err := decodeBody(req.Body, &in); err != nil {
		ollamaRequestError(w, err)
		return
	}
	if in.Model == "" {
		ollamaRequestError(w, errors.New("model is required"))
		return
	}
	inputs, err := inputStrings(in.Input)
	if err != nil {
		ollamaRequestError(w, errors.New("invalid input type"))
		return
	}
	m, ok := s.ollamaModel(in.Model)
	if !ok {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": fmt.Sprintf("model %q not found, try pulling it first", in.Model)})
		return
	}
	dim := m.Dim
	if dim == 0 {
		dim = 16
	}
	if in.Dimensions > 0 && in.Dimensions < dim {
		dim = in.Dimensions
	}
	if act.Dim > 0 {
		dim = act.Dim
	}
	b := []byte(`{"model":`)
	b = strconv.AppendQuote(b, in.Model)
	b = append(b, `,"embeddings":`...)
	b = appendVectors(b, inputs, dim, act)
	b = append(b, `,"total_duration":14143917,"load_duration":1019500,"prompt_eval_count":`...)
	b = strconv.AppendInt(b, int64(8*len(inputs)), 10)
	b = append(b, "}\n"...)
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Write(b)
}

// inputStrings reads an embedding input: a string or an array of strings.
func inputStrings(raw json.RawMessage) ([]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []string{one}, nil
	}
	var many []string
	if err := json.Unmarshal(raw, &many); err != nil {
		return nil, err
	}
	return many, nil
}

package modeltest

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

const created = 1735142223

// id is llama-server's model id: the alias, else the -m path.
func (m Model) id() string {
	if m.Name != "" {
		return m.Name
	}
	return m.Path
}

// upstreamModel is the llama-server llama-swap starts for m: served under
// its file path (no alias), so /upstream/<m>/v1/models shows the path.
func (m Model) upstream() Model {
	return Model{Path: m.Path, Dim: m.Dim}
}

// routeOpenAI answers as llama-server (or vLLM) serving model m; LlamaSwap
// uses it for the upstream of a model.
func (s *Server) routeOpenAI(w http.ResponseWriter, r *http.Request, req Request, act Action, m Model) {
	path := strings.TrimPrefix(r.URL.Path, "/v1")
	switch {
	case path == "/health" && r.Method == http.MethodGet:
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	case path == "/models" && r.Method == http.MethodGet:
		if s.Flavor == VLLM {
			s.vllmModels(w)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []any{map[string]any{
			"id": m.id(), "object": "model", "created": created, "owned_by": "llamacpp",
			"meta": map[string]any{"vocab_type": 2, "n_vocab": 151936, "n_ctx_train": 40960, "n_embd": 4096,
				"n_params": 8190735360, "size": 5027783488}}}})
	case path == "/chat/completions" && r.Method == http.MethodPost:
		if s.Flavor == VLLM {
			var ok bool
			if m, ok = s.vllmModel(req.Model); !ok {
				vllmNotFound(w, req.Model)
				return
			}
		}
		openAIChat(w, req, act, m)
	case path == "/embeddings" && r.Method == http.MethodPost:
		if s.Flavor == VLLM {
			var ok bool
			if m, ok = s.vllmModel(req.Model); !ok {
				vllmNotFound(w, req.Model)
				return
			}
		}
		openAIEmbed(w, req, act, m)
	case path == "/rerank" && r.Method == http.MethodPost:
		openAIRerank(w, req)
	default:
		llamaError(w, http.StatusNotFound, "File Not Found")
	}
}

func (s *Server) vllmModels(w http.ResponseWriter) {
	data := []any{}
	for _, m := range s.modelList() {
		data = append(data, map[string]any{"id": m.Name, "object": "model", "created": created, "owned_by": "vllm",
			"root": m.Path, "parent": nil, "max_model_len": 32768})
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
}

func (s *Server) vllmModel(name string) (Model, bool) {
	for _, m := range s.modelList() {
		if m.Name == name {
			return m, true
		}
	}
	return Model{}, false
}

func vllmNotFound(w http.ResponseWriter, name string) {
	writeJSON(w, http.StatusNotFound, map[string]any{"object": "error",
		"message": fmt.Sprintf("The model `%s` does not exist.", name), "type": "NotFoundError", "param": nil, "code": 404})
}

func openAIChat(w http.ResponseWriter, req Request, act Action, m Model) {
	var in struct {
		Model          string          `json:"model"`
		Messages       []Message       `json:"messages"`
		Stream         bool            `json:"stream"`
		ResponseFormat json.RawMessage `json:"response_format"`
		Kwargs         map[string]any  `json:"chat_template_kwargs"`
	}
	if err := decodeBody(req.Body, &in); err != nil {
		if errors.Is(err, io.EOF) {
			err = errors.New("empty request body")
		}
		llamaError(w, http.StatusBadRequest, err.Error())
		return
	}
	if v, ok := in.Kwargs["enable_thinking"]; ok {
		if _, isBool := v.(bool); !isBool {
			llamaError(w, http.StatusBadRequest, fmt.Sprintf(`invalid type for "enable_thinking" (expected boolean, got %s)`, jsonType(v)))
			return
		}
	}
	schema, err := responseSchema(in.ResponseFormat)
	if err != nil {
		llamaError(w, http.StatusBadRequest, err.Error())
		return
	}
	if in.Stream {
		llamaError(w, http.StatusBadRequest, "modeltest: streaming is not served")
		return
	}
	content := chatContent(act, Chat{Model: in.Model, Messages: in.Messages, Schema: schema})
	prompt, completion := cmp.Or(act.PromptTokens, 44), cmp.Or(act.ReplyTokens, 48)
	reply := map[string]any{
		"id": "chatcmpl-" + strconv.FormatInt(time.Now().UnixNano(), 36), "object": "chat.completion",
		"created": time.Now().Unix(), "model": m.id(), "system_fingerprint": "b6795-modeltest",
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
			"message": map[string]any{"role": "assistant", "content": content}}},
		"usage": map[string]any{"completion_tokens": completion, "prompt_tokens": prompt, "total_tokens": prompt + completion,
			"prompt_tokens_details": map[string]any{"cached_tokens": 0}},
		"timings": map[string]any{"prompt_n": 1, "predicted_n": 35},
	}
	if act.NoUsage {
		delete(reply, "usage")
	}
	writeJSON(w, http.StatusOK, reply)
}

// responseSchema reads response_format as llama-server does.
func responseSchema(raw json.RawMessage) (json.RawMessage, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var rf struct {
		Type       string          `json:"type"`
		Schema     json.RawMessage `json:"schema"`
		JSONSchema struct {
			Schema json.RawMessage `json:"schema"`
		} `json:"json_schema"`
	}
	if err := json.Unmarshal(raw, &rf); err != nil {
		return nil, err
	}
	switch rf.Type {
	case "text":
		return nil, nil
	case "json_object":
		return rf.Schema, nil
	case "json_schema":
		return rf.JSONSchema.Schema, nil
	}
	return nil, fmt.Errorf(`response_format type must be one of "text" or "json_object", but got: %s`, rf.Type)
}

func jsonType(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case float64:
		return "number"
	case nil:
		return "null"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "boolean"
}

func openAIEmbed(w http.ResponseWriter, req Request, act Action, m Model) {
	if m.Dim == 0 && act.Dim == 0 {
		llamaError(w, http.StatusNotImplemented, "This server does not support embeddings. Start it with `--embeddings`")
		return
	}
	var in struct {
		Model          string          `json:"model"`
		Input          json.RawMessage `json:"input"`
		EncodingFormat string          `json:"encoding_format"`
	}
	if err := decodeBody(req.Body, &in); err != nil {
		llamaError(w, http.StatusBadRequest, err.Error())
		return
	}
	inputs, err := inputStrings(in.Input)
	if err != nil || len(inputs) == 0 {
		llamaError(w, http.StatusBadRequest, `"input" must be a string or an array of strings`)
		return
	}
	dim := m.Dim
	if act.Dim > 0 {
		dim = act.Dim
	}
	name := in.Model
	if name == "" {
		name = m.id()
	}
	b := []byte(`{"model":`)
	b = strconv.AppendQuote(b, name)
	b = append(b, `,"object":"list","usage":{"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(9*len(inputs)), 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, int64(9*len(inputs)), 10)
	b = append(b, `},"data":[`...)
	for i, text := range inputs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"embedding":`...)
		b = appendVector(b, text, dim, act)
		b = append(b, `,"index":`...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, `,"object":"embedding"}`...)
	}
	b = append(b, "]}\n"...)
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Write(b)
}

// routeSwap answers as llama-swap: its own model list, routing on the
// body's model with a load (swap) first, and /upstream/<model>/….
func (s *Server) routeSwap(w http.ResponseWriter, r *http.Request, req Request, act Action) {
	switch {
	case r.URL.Path == "/health" && r.Method == http.MethodGet:
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, "OK")
	case r.URL.Path == "/running" && r.Method == http.MethodGet:
		loaded, _ := s.Loaded()
		running := []any{}
		if loaded != "" {
			running = append(running, map[string]any{"model": loaded, "state": "ready"})
		}
		writeJSON(w, http.StatusOK, map[string]any{"running": running})
	case (r.URL.Path == "/v1/models" || r.URL.Path == "/models") && r.Method == http.MethodGet:
		models := s.modelList()
		slices.SortFunc(models, func(a, b Model) int { return strings.Compare(a.Name, b.Name) })
		loaded, _ := s.Loaded()
		data := []any{}
		for _, m := range models {
			state := "stopped"
			if m.Name == loaded {
				state = "loaded"
			}
			data = append(data, map[string]any{"id": m.Name, "object": "model", "created": created,
				"owned_by": "llama-swap", "name": m.Name, "description": "",
				"meta": map[string]any{"llamaswap": map[string]any{}}, "status": map[string]any{"value": state}})
		}
		writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
	case strings.HasPrefix(r.URL.Path, "/upstream/"):
		rest := strings.TrimPrefix(r.URL.Path, "/upstream/")
		name, sub, hasSlash := strings.Cut(rest, "/")
		m, ok := s.swapModel(name)
		if !ok {
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, "model not found")
			return
		}
		if !hasSlash {
			http.Redirect(w, r, r.URL.Path+"/", http.StatusMovedPermanently)
			return
		}
		if err := s.load(r.Context(), m.Name); err != nil {
			panic(http.ErrAbortHandler)
		}
		r2 := r.Clone(r.Context())
		r2.URL.Path = "/" + sub
		s.routeOpenAI(w, r2, req, act, m.upstream())
	case r.URL.Path == "/v1/chat/completions" || r.URL.Path == "/v1/embeddings":
		if req.Model == "" {
			swapError(w, http.StatusNotFound, "no model id could be identified")
			return
		}
		m, ok := s.swapModel(req.Model)
		if !ok {
			swapError(w, http.StatusNotFound, "no router for requested model")
			return
		}
		if err := s.load(r.Context(), m.Name); err != nil {
			panic(http.ErrAbortHandler)
		}
		s.routeOpenAI(w, r, req, act, m.upstream())
	default:
		swapError(w, http.StatusNotFound, "not found")
	}
}

func (s *Server) swapModel(name string) (Model, bool) {
	for _, m := range s.modelList() {
		if m.Name == name {
			return m, true
		}
	}
	return Model{}, false
}

// load makes name the loaded model, taking the load delay when it was not.
func (s *Server) load(ctx context.Context, name string) error {
	s.swapMu.Lock()
	defer s.swapMu.Unlock()
	if s.loaded == name {
		return nil
	}
	s.mu.Lock()
	down := s.down
	s.mu.Unlock()
	if s.loadDelay > 0 && !wait(ctx, down, nil, s.loadDelay) {
		return errGone
	}
	s.loaded = name
	s.loads++
	return nil
}

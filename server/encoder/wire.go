package encoder

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/url"
	"path"
	"strconv"
	"strings"

	"github.com/hearth-memory/hearth/server/models/wire"
)

// Size limits of what the encoder sends back.
const (
	maxEmbedReply = 256 << 20
	maxModelList  = 4 << 20
)

func checkURL(base string) bool {
	u, err := url.Parse(base)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && u.User == nil &&
		!strings.ContainsAny(base, "?#")
}

// request embeds texts in one request and returns unit vectors of dim
// values (any dimension when dim is 0, but all alike).
func (e *Encoder) request(ctx context.Context, texts []string, dim int) ([][]float32, error) {
	var body []byte
	var err error
	endpoint := e.url + "/api/embed"
	if e.format == wire.OpenAI {
		endpoint = e.url + "/embeddings"
		body, err = wire.Marshal(struct {
			Model          string   `json:"model"`
			Input          []string `json:"input"`
			EncodingFormat string   `json:"encoding_format"`
		}{e.model, texts, "float"})
	} else {
		body, err = wire.Marshal(struct {
			Model string   `json:"model"`
			Input []string `json:"input"`
		}{e.model, texts})
	}
	if err != nil {
		return nil, err
	}
	b, err := wire.Do(ctx, e.hc, endpoint, body, maxEmbedReply)
	if err != nil {
		return nil, err
	}
	var vecs [][]float32
	if e.format == wire.OpenAI {
		vecs, err = decodeOpenAIEmbeddings(b, len(texts))
	} else {
		vecs, err = decodeOllamaEmbeddings(b, len(texts))
	}
	if err != nil {
		return nil, err
	}
	return vecs, checkVectors(vecs, dim)
}

// decodeOllamaEmbeddings reads /api/embed's {"embeddings":[[…],…]}.
func decodeOllamaEmbeddings(b []byte, n int) ([][]float32, error) {
	var resp struct {
		Embeddings []vector `json:"embeddings"`
	}
	if err := json.Unmarshal(b, &resp); err != nil {
		return nil, badVectors(err)
	}
	if len(resp.Embeddings) != n {
		return nil, wire.Bad("%d vectors for %d texts", len(resp.Embeddings), n)
	}
	out := make([][]float32, n)
	for i, v := range resp.Embeddings {
		out[i] = v
	}
	return out, nil
}

// decodeOpenAIEmbeddings reads /v1/embeddings' {"data":[{"embedding":[…],
// "index":i},…]}, placing each vector by its index.
func decodeOpenAIEmbeddings(b []byte, n int) ([][]float32, error) {
	var resp struct {
		Data []struct {
			Embedding vector `json:"embedding"`
			Index     *int   `json:"index"`
		} `json:"data"`
	}
	if err := json.Unmarshal(b, &resp); err != nil {
		return nil, badVectors(err)
	}
	if len(resp.Data) != n {
		return nil, wire.Bad("%d vectors for %d texts", len(resp.Data), n)
	}
	out := make([][]float32, n)
	for i, d := range resp.Data {
		at := i
		if d.Index != nil {
			at = *d.Index
		}
		if at < 0 || at >= n || out[at] != nil {
			return nil, wire.Bad("vector index %d out of place", at)
		}
		out[at] = d.Embedding
	}
	return out, nil
}

func badVectors(err error) error {
	var bad *vectorError
	if errors.As(err, &bad) {
		return wire.Bad("%s", bad.msg)
	}
	return wire.Bad("malformed reply")
}

// checkVectors holds every vector to dim (or to the first one's length
// when dim is 0) and scales it to unit length.
func checkVectors(vecs [][]float32, dim int) error {
	for i, v := range vecs {
		if dim == 0 {
			dim = len(v)
		}
		if len(v) != dim || dim == 0 {
			return wire.Bad("vector %d has %d dimensions, want %d", i, len(v), dim)
		}
		var sum float64
		for _, x := range v {
			sum += float64(x) * float64(x)
		}
		norm := math.Sqrt(sum)
		if norm == 0 || math.IsInf(norm, 0) || math.IsNaN(norm) {
			return wire.Bad("vector %d has norm %v", i, norm)
		}
		for j, x := range v {
			v[j] = float32(float64(x) / norm)
		}
	}
	return nil
}

// vector is a JSON array of finite numbers that fit a float32. Decoding
// refuses null (what llama.cpp's JSON writer makes of a NaN), which
// encoding/json would quietly leave as 0.
type vector []float32

type vectorError struct{ msg string }

func (e *vectorError) Error() string { return e.msg }

func (v *vector) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) < 2 || b[0] != '[' || b[len(b)-1] != ']' {
		return &vectorError{"a vector is not an array"}
	}
	inner := bytes.TrimSpace(b[1 : len(b)-1])
	out := make([]float32, 0, bytes.Count(inner, []byte{','})+1)
	if len(inner) > 0 {
		for f := range bytes.SplitSeq(inner, []byte{','}) {
			f = bytes.TrimSpace(f)
			if len(f) == 0 || !(f[0] == '-' || (f[0] >= '0' && f[0] <= '9')) {
				// null, a string, an object, an array: the syntax was already
				// checked by encoding/json, so a number starts this way.
				return &vectorError{"a vector holds a value that is not a number (NaN?)"}
			}
			x, err := strconv.ParseFloat(string(f), 32)
			if err != nil || math.IsInf(x, 0) {
				return &vectorError{"a vector holds a number out of float32 range"}
			}
			out = append(out, float32(x))
		}
	}
	*v = out
	return nil
}

// probe asks for the model list, which loads no model.
func (e *Encoder) probe(ctx context.Context) error {
	endpoint := e.url + "/api/tags"
	if e.format == wire.OpenAI {
		endpoint = e.url + "/models"
	}
	b, err := wire.Do(ctx, e.hc, endpoint, nil, maxModelList)
	if err != nil {
		return err
	}
	if e.format == wire.OpenAI {
		_, err = decodeModelList(b)
	} else {
		_, err = decodeTags(b)
	}
	return err
}

// ReadSnapshot reads the model snapshot now, bounded by BatchTimeout, and
// returns it (Embed does this around every batch). For llama-swap it calls
// /upstream/<model>/v1/models, which loads the model: call it only when
// embedding anyway, never as a probe. Like a batch's read, it keeps what it
// read as the snapshot of Query's vectors: a server whose first pass
// finds every vector current (after a restart, or another front end
// embedded them) embeds nothing, and its query vectors must still say
// which snapshot they are of.
func (e *Encoder) ReadSnapshot(ctx context.Context) (string, error) {
	if !e.Configured() {
		return "", ErrNotConfigured
	}
	s, err := e.readSnapshot(ctx)
	if err = e.account(ctx, err); err != nil {
		return "", err
	}
	e.mu.Lock()
	e.keepSnapshot(s)
	e.mu.Unlock()
	return s, nil
}

// readSnapshot finds the snapshot of e.model (R-M9):
//   - Ollama: the model's digest in /api/tags;
//   - an OpenAI-style server: in /v1/models, the last path segment of the
//     model's root, or of its id when there is no root (llama-server, whose
//     one entry names the -m path and answers whatever model is asked);
//   - llama-swap (its list says owned_by "llama-swap"): the same read from
//     the model's own server, /upstream/<model>/v1/models.
func (e *Encoder) readSnapshot(ctx context.Context) (string, error) {
	sctx, cancel := context.WithTimeout(ctx, e.batchTO)
	defer cancel()
	if e.format == wire.Ollama {
		b, err := wire.Do(sctx, e.hc, e.url+"/api/tags", nil, maxModelList)
		if err != nil {
			return "", err
		}
		tags, err := decodeTags(b)
		if err != nil {
			return "", err
		}
		for _, t := range tags {
			if ollamaSame(t.Name, e.model) || ollamaSame(t.Model, e.model) {
				if t.Digest == "" {
					return "", wire.Bad("model %s has no digest", e.model)
				}
				return t.Digest, nil
			}
		}
		return "", wire.Bad("model %s is not listed", e.model)
	}

	e.mu.Lock()
	swap := e.swap
	e.mu.Unlock()
	if !swap {
		b, err := wire.Do(sctx, e.hc, e.url+"/models", nil, maxModelList)
		if err != nil {
			return "", err
		}
		list, err := decodeModelList(b)
		if err != nil {
			return "", err
		}
		entry, ok := list.find(e.model)
		switch {
		case ok && entry.OwnedBy == "llama-swap":
			swap = true
		case ok:
			return snapshotOf(entry)
		case len(list) == 1 && list[0].OwnedBy != "llama-swap":
			return snapshotOf(list[0]) // llama-server: one model, any name
		default:
			return "", wire.Bad("model %s is not listed", e.model)
		}
	}
	root := strings.TrimSuffix(e.url, "/v1")
	b, err := wire.Do(sctx, e.hc, root+"/upstream/"+url.PathEscape(e.model)+"/v1/models", nil, maxModelList)
	if err != nil {
		var we *wire.Error
		if errors.As(err, &we) && we.Status == 404 {
			// Not llama-swap (any more), or the model is gone from it.
			e.mu.Lock()
			e.swap = false
			e.mu.Unlock()
		}
		return "", err
	}
	list, err := decodeModelList(b)
	if err != nil {
		return "", err
	}
	if len(list) == 0 {
		return "", wire.Bad("upstream of %s lists no model", e.model)
	}
	e.mu.Lock()
	e.swap = true
	e.mu.Unlock()
	entry, ok := list.find(e.model)
	if !ok {
		entry = list[0]
	}
	return snapshotOf(entry)
}

// ollamaSame reports whether two Ollama model names are the same model
// (an untagged name means :latest).
func ollamaSame(a, b string) bool {
	tag := func(s string) string {
		if s != "" && !strings.Contains(s, ":") {
			return s + ":latest"
		}
		return s
	}
	return a != "" && tag(a) == tag(b)
}

type modelEntry struct {
	ID      string   `json:"id"`
	Root    string   `json:"root"`
	OwnedBy string   `json:"owned_by"`
	Aliases []string `json:"aliases"`
}

type modelList []modelEntry

func (l modelList) find(model string) (modelEntry, bool) {
	for _, m := range l {
		if m.ID == model {
			return m, true
		}
		for _, a := range m.Aliases {
			if a == model {
				return m, true
			}
		}
	}
	return modelEntry{}, false
}

func decodeModelList(b []byte) (modelList, error) {
	var resp struct {
		Data *modelList `json:"data"`
	}
	if err := json.Unmarshal(b, &resp); err != nil || resp.Data == nil {
		return nil, wire.Bad("not an OpenAI model list")
	}
	return *resp.Data, nil
}

type tagEntry struct {
	Name   string `json:"name"`
	Model  string `json:"model"`
	Digest string `json:"digest"`
}

func decodeTags(b []byte) ([]tagEntry, error) {
	var resp struct {
		Models *[]tagEntry `json:"models"`
	}
	if err := json.Unmarshal(b, &resp); err != nil || resp.Models == nil {
		return nil, wire.Bad("not an Ollama model list")
	}
	return *resp.Models, nil
}

// snapshotOf is the last path segment of root, or of id without a root.
func snapshotOf(m modelEntry) (string, error) {
	src := m.Root
	if src == "" {
		src = m.ID
	}
	s := lastSegment(src)
	if s == "" {
		return "", wire.Bad("model entry %q has no snapshot", m.ID)
	}
	return s, nil
}

// lastSegment returns the last segment of a / or \ separated path.
func lastSegment(p string) string {
	p = strings.TrimRight(strings.ReplaceAll(p, `\`, "/"), "/")
	s := path.Base(p)
	if s == "." || s == "/" {
		return ""
	}
	return s
}

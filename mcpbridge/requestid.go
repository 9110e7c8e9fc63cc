package mcpbridge

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"strconv"
)

// maxSafeID is the largest integer id accepted: mcp-go reads a numeric id
// as a float64 and writes it back, so a larger one could come back changed
// (and a client in JavaScript could not hold it either).
const maxSafeID = 1<<53 - 1

// invalidIDReply is the JSON-RPC error for a request whose id is neither a
// string nor an integer. Its id is null: the request's cannot be echoed.
const invalidIDReply = `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: id must be a string or an integer of at most 2^53-1 either way (not null, a fraction, a boolean, an object or an array)"}}`

// validIDs refuses a request whose JSON-RPC id the specifications forbid,
// with HTTP 400 and the JSON-RPC error -32600 Invalid Request, before
// mcp-go reads it. JSON-RPC 2.0 allows a string, a number (without a
// fractional part, it says) or null; MCP allows a string or an integer and
// never null. A message without an id (a notification) and a body that is
// not JSON pass on: mcp-go answers those. The body is already bounded
// (gateway.Boundary).
func validIDs(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			// Too large or cut short: mcp-go reads the same error.
			r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), errReader{err}))
			next.ServeHTTP(w, r)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		if !idsValid(body) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, invalidIDReply)
			return
		}
		next.ServeHTTP(w, r)
	})
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// idsValid reports whether every message of body (one JSON object, or a
// batch of them) has an allowed id or none. What is not JSON, or not
// objects, is left for mcp-go to refuse.
func idsValid(body []byte) bool {
	body = bytes.TrimSpace(body)
	var msgs []json.RawMessage
	if len(body) > 0 && body[0] == '[' {
		if json.Unmarshal(body, &msgs) != nil {
			return true
		}
	} else {
		msgs = []json.RawMessage{body}
	}
	for _, m := range msgs {
		var fields map[string]json.RawMessage
		if json.Unmarshal(m, &fields) != nil {
			continue
		}
		if id, ok := fields["id"]; ok && !validID(id) {
			return false
		}
	}
	return true
}

// validID reports whether id, a JSON value, is a string or an integer
// within ±maxSafeID (written as 7, -7, 7.0 or 7e0 alike).
func validID(id json.RawMessage) bool {
	if len(id) == 0 {
		return false
	}
	switch c := id[0]; {
	case c == '"':
		return true
	case c == '-' || c >= '0' && c <= '9':
		f, err := strconv.ParseFloat(string(id), 64)
		return err == nil && f == math.Trunc(f) && math.Abs(f) <= maxSafeID
	}
	return false
}

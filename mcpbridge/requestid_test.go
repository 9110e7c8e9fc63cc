package mcpbridge_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestNew_RequestID holds issue 41 item 11: a JSON-RPC id the
// specifications forbid (an object, an array, a boolean, null, a number
// with a fraction, an integer past 2^53-1) is answered 400 with -32600
// Invalid Request and id null, before anything runs; strings and integers
// (7.0 and 7e0 are integers) are answered as before, with their id.
func TestNew_RequestID(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	post := func(body string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		r.Header.Set("MCP-Protocol-Version", "2025-11-25")
		rec := httptest.NewRecorder()
		e.mcp.ServeHTTP(rec, r)
		return rec
	}
	for _, id := range []string{`{"a":1}`, `[1]`, `true`, `false`, `null`, `1.5`, `-0.25`, `1e-3`, `9007199254740993`, `1e300`} {
		t.Run("Err"+id, func(t *testing.T) {
			t.Parallel()
			rec := post(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/list","params":{}}`)
			var resp rpcResponse
			if err := json.Unmarshal(rec.Body.Bytes(), &resp); err != nil {
				t.Fatalf("id %s: reply %q: %v", id, rec.Body, err)
			}
			if rec.Code != http.StatusBadRequest || resp.Error == nil || resp.Error.Code != -32600 || resp.ID != nil {
				t.Errorf("id %s: status %d, reply %s; want 400, -32600 and id null", id, rec.Code, rec.Body)
			}
			if !strings.Contains(rec.Body.String(), `"id":null`) {
				t.Errorf("id %s: reply %s has no id null", id, rec.Body)
			}
		})
	}
	t.Run("ErrInBatch", func(t *testing.T) {
		t.Parallel()
		rec := post(`[{"jsonrpc":"2.0","id":1,"method":"tools/list"},{"jsonrpc":"2.0","id":{},"method":"tools/list"}]`)
		if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "-32600") {
			t.Errorf("batch with an object id: status %d, reply %s", rec.Code, rec.Body)
		}
	})
	for _, c := range []struct{ id, echo string }{{`"abc"`, `"abc"`}, {`7`, `7`}, {`-7`, `-7`}, {`7.0`, `7`}, {`7e0`, `7`}, {`0`, `0`}, {`9007199254740991`, `9007199254740991`}} {
		t.Run("OK"+c.id, func(t *testing.T) {
			t.Parallel()
			rec := post(`{"jsonrpc":"2.0","id":` + c.id + `,"method":"tools/list","params":{}}`)
			if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"id":`+c.echo+`,`) || strings.Contains(rec.Body.String(), `"error"`) {
				t.Errorf("id %s: status %d, reply %.200s; want 200 with id %s", c.id, rec.Code, rec.Body, c.echo)
			}
		})
	}
}

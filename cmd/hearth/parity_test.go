package main

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/hearth-memory/hearth/server/auth"
)

// parityCases gives, for every tool, a function that prepares the state the
// call needs and returns its arguments. It is called once per transport, so
// mutating tools act on twin records. A tool missing here fails the test.
func parityCases(t *testing.T, td *testDaemon) map[string]func() any {
	tok := td.tokens["claude-code"]
	rest := restTransport{td}
	ns := "github/acme/parity"
	seed := rest.call(t, tok, "memory_store", storeArgs(ns, "Parity seed", "Cache invalidation happens on write."))
	if !seed.ok {
		t.Fatalf("seed: %v", seed)
	}
	seedID := str(seed.body, "record", "id")
	fresh := func() string {
		r := rest.call(t, tok, "memory_store", storeArgs(ns, "Parity twin", "A record for one mutating call."))
		if !r.ok {
			t.Fatalf("twin: %v", r)
		}
		return str(r.body, "record", "id")
	}
	return map[string]func() any{
		"memory_store": func() any { return storeArgs(ns, "Stored twice", "Same content through two transports.") },
		"memory_get":   func() any { return map[string]any{"ids": []string{seedID}} },
		"memory_update": func() any {
			return map[string]any{"id": fresh(), "revision": 1, "changes": map[string]any{"title": "Updated twin"}}
		},
		"memory_forget": func() any { return map[string]any{"id": fresh(), "reason": "parity"} },
		"memory_search": func() any { return map[string]any{"namespace": ns, "query": "cache invalidation"} },
		"memory_timeline": func() any {
			return map[string]any{"namespace": ns, "until": "2000-01-01T00:00:00Z"}
		},
		"memory_status": func() any { return map[string]any{} },
	}
}

// volatile keys differ between twin records by nature; estimated_tokens
// follows from their lengths.
var volatile = map[string]bool{"id": true, "created_at": true, "updated_at": true, "checked_at": true, "estimated_tokens": true}

func mask(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k := range x {
			if volatile[k] {
				x[k] = "<masked>"
			} else {
				x[k] = mask(x[k])
			}
		}
	case []any:
		for i := range x {
			x[i] = mask(x[i])
		}
	}
	return v
}

// TestParity_RESTAndMCP holds R-T9: for every tool the REST body and the MCP
// result carry the same JSON. Read-only tools are compared byte for byte.
func TestParity_RESTAndMCP(t *testing.T) {
	td := startDaemon(t, testOptions())
	tok := td.tokens["claude-code"]
	cases := parityCases(t, td)
	for _, sd := range auth.Services() {
		for i := 0; i < sd.Methods().Len(); i++ {
			tool := auth.ToolOf(sd.Methods().Get(i))
			t.Run(tool.GetName(), func(t *testing.T) {
				args, ok := cases[tool.GetName()]
				if !ok {
					t.Fatalf("no parity case for %s: add one", tool.GetName())
				}
				r := restTransport{td}.call(t, tok, tool.GetName(), args())
				m := mcpTransport{td: td}.call(t, tok, tool.GetName(), args())
				if !r.ok || !m.ok {
					t.Fatalf("rest %v / mcp %v", r, m)
				}
				if tool.GetReadOnly() {
					if !bytes.Equal(r.raw, m.raw) {
						t.Errorf("bytes differ:\nrest %s\nmcp  %s", r.raw, m.raw)
					}
					return
				}
				rj, _ := json.Marshal(mask(r.body))
				mj, _ := json.Marshal(mask(m.body))
				if !bytes.Equal(rj, mj) {
					t.Errorf("JSON differs:\nrest %s\nmcp  %s", rj, mj)
				}
			})
		}
	}
	// Errors share one body too.
	bad := map[string]any{"namespace": "Not A Namespace", "type": "decision", "title": "t", "content": "c"}
	r := restTransport{td}.call(t, tok, "memory_store", bad)
	m := mcpTransport{td: td}.call(t, tok, "memory_store", bad)
	if r.ok || !bytes.Equal(r.raw, m.raw) {
		t.Errorf("error bodies differ:\nrest %s\nmcp  %s", r.raw, m.raw)
	}
	if r.code != "INVALID_ARGUMENT" || r.http != 400 || str(r.body, "error", "field") != "namespace" {
		t.Errorf("bad namespace: %v", r)
	}
}

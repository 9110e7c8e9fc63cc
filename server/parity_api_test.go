package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/hearth-memory/hearth/server/servertest"
)

// parityCases gives, for every tool, a function that prepares the state the
// call needs and returns its arguments. It is called once per transport, so
// mutating tools act on twin records. A tool missing here fails the test.
func parityCases(t *testing.T, td *servertest.Server) map[string]func() any {
	tok := td.Tokens["claude-code"]
	rest := td.REST
	ns := "github/acme/parity"
	seed := rest.Call(t, tok, "memory_store", storeArgs(ns, "Parity seed", "Cache invalidation happens on write."))
	if !seed.OK {
		t.Fatalf("seed: %v", seed)
	}
	seedID := str(seed.Body, "record", "id")
	closes, imports, captures, reruns := 0, 0, 0, 0
	fresh := func() string {
		r := rest.Call(t, tok, "memory_store", storeArgs(ns, "Parity twin", "A record for one mutating call."))
		if !r.OK {
			t.Fatalf("twin: %v", r)
		}
		return str(r.Body, "record", "id")
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
		"memory_history": func() any { return map[string]any{"id": seedID, "limit": 10} },
		"memory_status":  func() any { return map[string]any{} },
		"memory_bootstrap": func() any {
			// Bootstrap orders records of a type and confidence by use:
			// write the uses earlier calls counted (memory_get, search and
			// context), which the usage flusher otherwise writes on its own
			// tick, between the two calls at times; bootstrap counts none.
			if err := td.DB.FlushUsage(context.Background()); err != nil {
				t.Fatal(err)
			}
			return map[string]any{"namespace": ns, "topics": []string{"parity"}, "session_id": "parity-session"}
		},
		"memory_context": func() any {
			return map[string]any{"namespace": ns, "task": "Change how the cache invalidation works", "budget_tokens": 2000}
		},
		"memory_audit":  func() any { return map[string]any{"limit": 5} },
		"memory_whoami": func() any { return map[string]any{} },
		"memory_evidence": func() any {
			return map[string]any{"id": fresh(), "stance": "contradicts", "note": "parity"}
		},
		"memory_unused": func() any { return map[string]any{"namespace": ns, "limit": 5} },
		"memory_namespace": func() any {
			return map[string]any{"remote": "git@github.com:Acme/Parity.git"}
		},
		"memory_questions": func() any {
			// Searches are recorded in batches: write what waits, so both
			// transports read the same figures.
			if err := td.DB.FlushAsks(context.Background()); err != nil {
				t.Fatal(err)
			}
			return map[string]any{"namespace": ns, "limit": 5}
		},
		"memory_question_add": func() any {
			return map[string]any{"namespace": ns, "text": "How is the cache invalidated?"}
		},
		"memory_answer": func() any {
			// Both transports read the same answer: declare the question and
			// wait until the worker has answered it.
			if r := rest.Call(t, tok, "memory_question_add", map[string]any{"namespace": ns, "text": "How is the cache invalidated?"}); !r.OK {
				t.Fatalf("declare: %v", r)
			}
			awaitAnswer(t, td, tok, ns, "How is the cache invalidated?")
			return map[string]any{"namespace": ns, "text": "cache invalidation: how?"}
		},
		"memory_anchor_report": func() any {
			// A twin record with a path anchor each time, reported gone.
			args := storeArgs(ns, "Parity anchored", "Depends on a file.")
			args["anchors"] = []string{"path:deploy/values.yaml"}
			r := rest.Call(t, tok, "memory_store", args)
			if !r.OK {
				t.Fatalf("anchored twin: %v", r)
			}
			return map[string]any{"id": str(r.Body, "record", "id"), "anchor": "path:deploy/values.yaml",
				"state": "unavailable", "detail": "removed in 3f2a1c"}
		},
		"memory_anchor_sweep": func() any { return map[string]any{} },
		"memory_backup":       func() any { return map[string]any{} },
		"memory_export":       func() any { return map[string]any{"namespace_prefix": "github/acme", "limit": 2} },
		"memory_metrics":      func() any { return map[string]any{} },
		"memory_tokens":       func() any { return map[string]any{} },
		"memory_extraction_receipts": func() any {
			seedReceipt(t, td, ns)
			return map[string]any{"limit": 5}
		},
		// Each transport reruns with a model of its own (one rerun per
		// receipt and model).
		"memory_extraction_rerun": func() any {
			reruns++
			return map[string]any{"receipt_id": seedReceipt(t, td, ns), "model": fmt.Sprintf("m%d", reruns)}
		},
		// Each transport pauses running calls and resumes paused ones.
		"memory_model_pause": func() any {
			if r := rest.Call(t, tok, "memory_model_resume", map[string]any{}); !r.OK {
				t.Fatalf("resume: %v", r)
			}
			return map[string]any{}
		},
		"memory_model_resume": func() any {
			if r := rest.Call(t, tok, "memory_model_pause", map[string]any{}); !r.OK {
				t.Fatalf("pause: %v", r)
			}
			return map[string]any{}
		},
		// codex: the parity calls all use claude-code's token.
		"memory_token_rotate": func() any { return map[string]any{"client": "codex"} },
		"memory_import": func() any {
			imports++ // each transport imports a line of its own
			return map[string]any{"lines": fmt.Sprintf(`{"namespace":%q,"type":"note","title":"Imported %d","content":"A line to import."}`+"\n", ns, imports)}
		},
		"memory_capture": func() any {
			captures++ // each transport captures an event of its own
			return map[string]any{"events": []map[string]any{{
				"id": fmt.Sprintf("parity-event-%d", captures), "session_id": "parity-session", "harness": "claude-code",
				"namespace": ns, "kind": "command", "command": fmt.Sprintf("go test ./parity/%d", captures),
				"ok": false, "exit_code": 1, "tests": []string{"TestParity"}, "errors": []string{"--- FAIL: TestParity"},
				"at": "2026-12-07T01:00:00Z",
			}}}
		},
		"memory_session_close": func() any {
			closes++ // each transport closes with its own op_id
			return map[string]any{
				"session_id": "parity-session", "namespace": ns, "op_id": fmt.Sprintf("parity-close-%d", closes),
				"summary": "Compared the transports.", "notes": "Nothing else to note.",
			}
		},
	}
}

// volatile keys differ between twin records (and twin session receipts) by
// nature; estimated_tokens follows from their lengths.
var volatile = map[string]bool{"id": true, "created_at": true, "updated_at": true, "checked_at": true, "estimated_tokens": true,
	"op_id": true, "closed_at": true, "job_id": true, "summary_id": true, "swept_at": true,
	// A backup's file, size and timing; a rotation's time.
	"path": true, "bytes": true, "took_ms": true, "taken_at": true, "rotated_at": true}

// changing tools answer read-only calls whose content changes with every
// call, the call itself included: they are compared masked.
var changing = map[string]string{"memory_metrics": "text"}

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
// servertest.Result carry the same JSON. Read-only tools are compared byte for byte.
func TestParity_RESTAndMCP(t *testing.T) {
	t.Parallel()
	td := servertest.Start(t, parityOptions())
	tok := td.Tokens["claude-code"]
	cases := parityCases(t, td)
	for _, r := range routes(t) {
		tool := r.Tool
		t.Run(tool.GetName(), func(t *testing.T) {
			args, ok := cases[tool.GetName()]
			if !ok {
				t.Fatalf("no parity case for %s: add one", tool.GetName())
			}
			r := td.REST.Call(t, tok, tool.GetName(), args())
			m := td.MCP.Call(t, tok, tool.GetName(), args())
			if !r.OK || !m.OK {
				t.Fatalf("rest %v / mcp %v", r, m)
			}
			if key, ok := changing[tool.GetName()]; ok {
				rb, mb := r.Body, m.Body
				if _, ok := rb[key].(string); !ok || len(rb) != len(mb) {
					t.Errorf("rest %s / mcp %s: want %q in both", r.Raw, m.Raw, key)
				}
				return
			}
			if tool.GetReadOnly() {
				if !bytes.Equal(r.Raw, m.Raw) && !sameButDisk(r, m) {
					t.Errorf("bytes differ:\nrest %s\nmcp  %s", r.Raw, m.Raw)
				}
				return
			}
			rj, _ := json.Marshal(mask(r.Body))
			mj, _ := json.Marshal(mask(m.Body))
			if !bytes.Equal(rj, mj) {
				t.Errorf("JSON differs:\nrest %s\nmcp  %s", rj, mj)
			}
		})
	}
	// Errors share one body too.
	bad := map[string]any{"namespace": "Not A Namespace", "type": "decision", "title": "t", "content": "c"}
	r := td.REST.Call(t, tok, "memory_store", bad)
	m := td.MCP.Call(t, tok, "memory_store", bad)
	if r.OK || !bytes.Equal(r.Raw, m.Raw) {
		t.Errorf("error bodies differ:\nrest %s\nmcp  %s", r.Raw, m.Raw)
	}
	if r.Code != "INVALID_ARGUMENT" || r.HTTP != 400 || str(r.Body, "error", "field") != "namespace" {
		t.Errorf("bad namespace: %v", r)
	}
}

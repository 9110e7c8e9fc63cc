package main

import (
	"testing"

	"github.com/hearth-memory/hearth/storage/anchor"
)

// TestRecordRules_AsClientsSeeThem holds what a client reads when a request
// breaks a rule storage owns (a record's type, status and confidence, a
// blank title or content, an update that changes nothing, an evidence
// stance, an op_id, a reported anchor state, an anchor's form): through
// REST, MCP and gRPC the same INVALID_ARGUMENT (HTTP 400) naming the field,
// with the same message, whichever of server and storage refuses it
// (docs/design.md R-R8).
func TestRecordRules_AsClientsSeeThem(t *testing.T) {
	t.Parallel()
	const types = "must be decision, constraint, requirement, procedure, preference, note or summary"
	_, anchorErr := anchor.Parse("path:../x")
	if anchorErr == nil {
		t.Fatal("anchor.Parse took path:../x")
	}
	const ns = "github/acme/api"
	td := startDaemon(t, testOptions())
	id := store(t, td, ns, "note", "A record the rules are tried on", "Plain.")
	update := func(changes map[string]any) map[string]any {
		return map[string]any{"id": id, "revision": 1, "changes": changes}
	}
	withStore := func(k string, v any) map[string]any {
		args := storeArgs(ns, "Deploy runbook", "Run it.")
		args[k] = v
		return args
	}
	for _, tr := range transports(td) {
		for _, c := range []struct {
			tool  string
			args  map[string]any
			field string
			msg   string
		}{
			{"memory_store", withStore("type", "fact"), "type", types},
			{"memory_store", withStore("title", "   "), "title", "is required"},
			{"memory_store", withStore("content", "\n"), "content", "is required"},
			{"memory_store", withStore("confidence", 1.5), "confidence", "must be above 0 and at most 1"},
			{"memory_store", withStore("anchors", []string{"path:../x"}), "anchors[0]", anchorErr.Error()},
			{"memory_update", update(map[string]any{}), "changes", "changes nothing"},
			{"memory_update", update(map[string]any{"title": " "}), "changes.title", "is required"},
			{"memory_update", update(map[string]any{"type": "fact"}), "changes.type", types},
			{"memory_update", update(map[string]any{"status": "deleted"}), "changes.status", "can only move between active and candidate"},
			{"memory_update", update(map[string]any{"confidence": 0}), "changes.confidence", "must be above 0 and at most 1"},
			{"memory_evidence", map[string]any{"id": id, "stance": "agrees"}, "stance", "must be corroborates or contradicts"},
			{"memory_session_close", map[string]any{"session_id": "s1", "op_id": "short"}, "op_id", "must be 8-64 of A-Za-z0-9_-"},
			{"memory_anchor_report", map[string]any{"id": id, "anchor": "path:a.go", "state": "gone"}, "state", "must be available or unavailable"},
			{"memory_timeline", map[string]any{"within": "all", "types": []string{"fact"}}, "types[0]", types},
			{"memory_timeline", map[string]any{"within": "all", "statuses": []string{"Active"}}, "statuses[0]", "must be active, candidate, superseded or deleted"},
		} {
			r := tr.call(t, td.tokens["claude-code"], c.tool, c.args)
			want := c.field + ": " + c.msg
			if r.ok || r.code != "INVALID_ARGUMENT" || r.http != 400 || str(r.body, "error", "field") != c.field ||
				str(r.body, "error", "message") != want {
				t.Errorf("%s %s %v: %v, want INVALID_ARGUMENT/400 naming %s: %q", tr.name(), c.tool, c.args, r, c.field, want)
			}
		}
	}
}

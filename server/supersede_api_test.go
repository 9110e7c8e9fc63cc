package server_test

import (
	"testing"

	"github.com/hearth-memory/hearth/server/servertest"
)

// TestDaemon_SupersessionGuards holds R-R5 through the API: each guard
// refuses with INVALID_ARGUMENT naming the field, and nothing is written.
func TestDaemon_SupersessionGuards(t *testing.T) {
	t.Parallel()
	td := servertest.Start(t, testOptions())
	tok := td.Tokens["claude-code"]
	rest := td.REST
	ns := "github/acme/guards"
	store := func(args map[string]any) string {
		t.Helper()
		r := rest.Call(t, tok, "memory_store", args)
		if !r.OK {
			t.Fatalf("store: %v", r)
		}
		return str(r.Body, "record", "id")
	}
	a := store(storeArgs(ns, "A", "first"))
	b := store(storeArgs(ns, "B", "second"))
	elsewhere := store(storeArgs("github/acme/other", "E", "elsewhere"))
	// c supersedes a: a is superseded.
	cArgs := storeArgs(ns, "C", "third")
	cArgs["supersedes"] = a
	c := store(cArgs)
	// d is demoted to a candidate.
	d := store(storeArgs(ns, "D", "fourth"))
	if r := rest.Call(t, tok, "memory_update", map[string]any{"id": d, "revision": 1, "changes": map[string]any{"status": "candidate"}}); !r.OK {
		t.Fatalf("demote: %v", r)
	}

	snapshot := func() string {
		r := rest.Call(t, tok, "memory_get", map[string]any{"ids": []string{a, b, c, d, elsewhere}})
		return string(r.Raw)
	}
	revOf := func(id string) float64 {
		r := rest.Call(t, tok, "memory_get", map[string]any{"ids": []string{id}})
		return num(r.Body, "records", 0, "revision")
	}
	cases := []struct {
		name  string
		tool  string
		args  map[string]any
		field string
	}{
		{"Self", "memory_update", map[string]any{"id": b, "revision": revOf(b), "changes": map[string]any{"supersedes": b}}, "changes.supersedes"},
		// Through the API a cycle is stopped before the cycle rule: the record
		// that would close it is already superseded and cannot change. The
		// cycle rule itself is tested in storage on hand-made state.
		{"Cycle", "memory_update", map[string]any{"id": a, "revision": revOf(a), "changes": map[string]any{"supersedes": c}}, "id"},
		{"OtherNamespace", "memory_store", func() map[string]any { m := storeArgs(ns, "X", "x"); m["supersedes"] = elsewhere; return m }(), "supersedes"},
		{"FromCandidate", "memory_update", map[string]any{"id": d, "revision": revOf(d), "changes": map[string]any{"supersedes": b}}, "changes.supersedes"},
		{"OfNonActive", "memory_store", func() map[string]any { m := storeArgs(ns, "Y", "y"); m["supersedes"] = a; return m }(), "supersedes"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := snapshot()
			beforeStatus := rest.Call(t, tok, "memory_status", map[string]any{})
			r := rest.Call(t, tok, tc.tool, tc.args)
			if r.OK || r.Code != "INVALID_ARGUMENT" || r.HTTP != 400 {
				t.Fatalf("got %v, want INVALID_ARGUMENT/400", r)
			}
			if got := str(r.Body, "error", "field"); got != tc.field {
				t.Errorf("field = %q, want %q", got, tc.field)
			}
			if after := snapshot(); after != before {
				t.Errorf("records changed:\nbefore %s\nafter  %s", before, after)
			}
			if after := rest.Call(t, tok, "memory_status", map[string]any{}); !sameRecords(beforeStatus, after) {
				t.Errorf("status changed: a record was written:\nbefore %s\nafter  %s", beforeStatus.Raw, after.Raw)
			}
		})
	}
	// A candidate promoted and superseding in one update is allowed.
	r := rest.Call(t, tok, "memory_update", map[string]any{"id": d, "revision": revOf(d), "changes": map[string]any{"status": "active", "supersedes": b}})
	if !r.OK || str(r.Body, "record", "supersedes") != b {
		t.Fatalf("promote and supersede: %v", r)
	}
}

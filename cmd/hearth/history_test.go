package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// historyLines renders memory_history's entries as "client action rN".
func historyLines(body map[string]any) []string {
	var out []string
	for _, e := range list(body, "entries") {
		out = append(out, fmt.Sprintf("%s %s r%d", str(e, "client"), str(e, "action"), int(num(e, "revision"))))
	}
	return out
}

// TestMemory_History holds memory_history over REST, MCP and gRPC: the
// record, its audit rows newest first with client and revision, the
// evidence stances and the usage counters, read without counting a use.
func TestMemory_History(t *testing.T) {
	td := startDaemon(t, witnessOptions())
	claude, codex := td.tokens["claude-code"], td.tokens["codex"]
	for _, tr := range transports(td) {
		t.Run(tr.name(), func(t *testing.T) {
			ns := "github/acme/history-" + tr.name()
			st := tr.call(t, claude, "memory_store", storeArgs(ns, "Retries are capped", "Three attempts, then the job fails."))
			if !st.ok {
				t.Fatalf("store: %v", st)
			}
			id := str(st.body, "record", "id")
			if r := tr.call(t, codex, "memory_update", map[string]any{"id": id, "revision": 1, "changes": map[string]any{"title": "Retries are capped at three"}}); !r.ok {
				t.Fatalf("update: %v", r)
			}
			if r := tr.call(t, claude, "memory_update", map[string]any{"id": id, "revision": 1, "changes": map[string]any{"content": "stale"}}); r.ok || r.code != "ABORTED" {
				t.Fatalf("stale update: %v, want ABORTED", r)
			}
			if r := tr.call(t, td.tokens["gemini"], "memory_evidence", map[string]any{"id": id, "stance": "corroborates", "note": "saw it in the config"}); !r.ok {
				t.Fatalf("evidence: %v", r)
			}
			if r := tr.call(t, codex, "memory_evidence", map[string]any{"id": id, "stance": "contradicts"}); !r.ok {
				t.Fatalf("evidence: %v", r)
			}
			if r := tr.call(t, claude, "memory_search", map[string]any{"namespace": ns, "query": "retries capped"}); !r.ok || len(list(r.body, "hits")) != 1 {
				t.Fatalf("search: %v", r)
			}
			if r := tr.call(t, claude, "memory_get", map[string]any{"ids": []string{id}}); !r.ok {
				t.Fatalf("get: %v", r)
			}

			h := tr.call(t, td.tokens["aider"], "memory_history", map[string]any{"id": id})
			if !h.ok {
				t.Fatalf("history: %v", h)
			}
			if str(h.body, "record", "id") != id || num(h.body, "record", "revision") != 4 || str(h.body, "record", "title") != "Retries are capped at three" {
				t.Errorf("record %v, want %s at revision 4", get(h.body, "record"), id)
			}
			want := []string{"codex evidence r4", "gemini evidence r3", "claude-code refuse.conflict r2", "codex update r2", "claude-code store r1"}
			if got := historyLines(h.body); !slices.Equal(got, want) {
				t.Errorf("entries %q, want %q", got, want)
			}
			if num(h.body, "total_entries") != 5 || h.body["truncated"] == true {
				t.Errorf("total_entries %v truncated %v, want 5 and false", h.body["total_entries"], h.body["truncated"])
			}
			if d := str(list(h.body, "entries")[3], "detail"); d != "changed title" {
				t.Errorf("update detail %q", d)
			}
			ev := list(h.body, "evidence")
			if len(ev) != 2 || str(ev[0], "client") != "gemini" || str(ev[0], "stance") != "corroborates" || str(ev[0], "note") != "saw it in the config" ||
				str(ev[1], "client") != "codex" || str(ev[1], "stance") != "contradicts" || str(ev[1], "at") == "" {
				t.Errorf("evidence %v", ev)
			}
			if num(h.body, "usage", "returned") != 1 || num(h.body, "usage", "fetched") != 1 ||
				str(h.body, "usage", "last_returned_at") == "" || str(h.body, "usage", "last_fetched_at") == "" {
				t.Errorf("usage %v, want returned 1 fetched 1 with times", get(h.body, "usage"))
			}
			// Reading a history is not a use.
			again := tr.call(t, claude, "memory_history", map[string]any{"id": id})
			if fmt.Sprint(get(again.body, "usage")) != fmt.Sprint(get(h.body, "usage")) {
				t.Errorf("usage moved from %v to %v on a history read", get(h.body, "usage"), get(again.body, "usage"))
			}
			if r := tr.call(t, claude, "memory_history", map[string]any{"id": id, "limit": 2}); !slices.Equal(historyLines(r.body), want[:2]) || num(r.body, "total_entries") != 5 || num(r.body, "left_out") != 0 {
				t.Errorf("limit 2: %v, want the latest two rows and no left_out (the caller asked for two)", r)
			}
		})
	}
	t.Run("ErrNotFound", func(t *testing.T) {
		for _, tr := range transports(td) {
			r := tr.call(t, claude, "memory_history", map[string]any{"id": "01JD3M5ZK9Q8W7E6R5T4Y3X2V1"})
			if r.ok || r.code != "NOT_FOUND" || r.http != http.StatusNotFound || str(r.body, "error", "field") != "id" {
				t.Errorf("%s: %v, want NOT_FOUND naming id", tr.name(), r)
			}
		}
	})
	t.Run("ErrBadID", func(t *testing.T) {
		for _, tr := range transports(td) {
			r := tr.call(t, claude, "memory_history", map[string]any{"id": "not-an-id"})
			if r.ok || r.code != "INVALID_ARGUMENT" || str(r.body, "error", "field") != "id" {
				t.Errorf("%s: %v, want INVALID_ARGUMENT naming id", tr.name(), r)
			}
		}
	})
	t.Run("ErrNoToken", func(t *testing.T) {
		r := restTransport{td}.call(t, "", "memory_history", map[string]any{"id": "01JD3M5ZK9Q8W7E6R5T4Y3X2V1"})
		if r.ok || r.http != http.StatusUnauthorized {
			t.Errorf("%v, want 401", r)
		}
	})
}

// TestMemory_HistoryBudget: a record at its largest with a long history
// comes whole, and its stances and audit rows fill the records budget on
// top of it; what is left out is counted.
func TestMemory_HistoryBudget(t *testing.T) {
	td := startDaemon(t, witnessOptions())
	claude := td.tokens["claude-code"]
	rest := restTransport{td}
	st := rest.call(t, claude, "memory_store", storeArgs("global", "A long record", strings.Repeat("word ", 1150)))
	if !st.ok {
		t.Fatalf("store: %v", st)
	}
	id := str(st.body, "record", "id")
	rev := 1
	for i := range 60 {
		r := rest.call(t, claude, "memory_update", map[string]any{"id": id, "revision": rev,
			"changes": map[string]any{"confidence": 0.5 + float64(i%40)/100}})
		if !r.ok {
			t.Fatalf("update %d: %v", i, r)
		}
		rev = int(num(r.body, "record", "revision"))
	}
	for _, c := range []string{"codex", "gemini", "aider"} {
		if r := rest.call(t, td.tokens[c], "memory_evidence", map[string]any{"id": id, "stance": "corroborates", "note": strings.Repeat("n", 480)}); !r.ok {
			t.Fatalf("evidence: %v", r)
		}
	}
	for _, tr := range transports(td) {
		t.Run(tr.name(), func(t *testing.T) {
			h := tr.call(t, claude, "memory_history", map[string]any{"id": id, "limit": 100})
			if !h.ok {
				t.Fatalf("history: %v", h)
			}
			var parts struct{ Record json.RawMessage }
			if err := json.Unmarshal(h.raw, &parts); err != nil || len(parts.Record) < 4600 {
				t.Fatalf("record: %d bytes (%v), want the long record", len(parts.Record), err)
			}
			maxBytes := 2000*4 + len(parts.Record)
			entries, ev := len(list(h.body, "entries")), len(list(h.body, "evidence"))
			offered := 64 + 3 // every audit row (fewer than the limit) and every stance
			if h.body["truncated"] != true || int(num(h.body, "left_out")) != offered-entries-ev || entries == 0 || ev != 3 {
				t.Errorf("entries %d evidence %d left_out %v truncated %v, want some rows kept and the rest counted",
					entries, ev, h.body["left_out"], h.body["truncated"])
			}
			if num(h.body, "total_entries") != 64 {
				t.Errorf("total_entries %v, want 64 (store, 60 updates, 3 stances)", h.body["total_entries"])
			}
			if got := int(num(h.body, "estimated_tokens")); got > (maxBytes+3)/4 || got < 2000 {
				t.Errorf("estimated_tokens %d, want the 2,000-token budget nearly full on top of the record's %d bytes", got, len(parts.Record))
			}
			if tr.name() != "grpc" && len(h.raw) > maxBytes { // gRPC's JSON is the test's own rendering
				t.Errorf("%s: the response is %d bytes, over 8,000 + the record's %d", tr.name(), len(h.raw), len(parts.Record))
			}
		})
	}
}

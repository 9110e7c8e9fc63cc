package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/hearth-memory/hearth/server/servertest"
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
	t.Parallel()
	td := servertest.Start(t, witnessOptions())
	claude, codex := td.Tokens["claude-code"], td.Tokens["codex"]
	for _, tr := range td.Transports() {
		t.Run(tr.Name(), func(t *testing.T) {
			ns := "github/acme/history-" + tr.Name()
			st := tr.Call(t, claude, "memory_store", storeArgs(ns, "Retries are capped", "Three attempts, then the job fails."))
			if !st.OK {
				t.Fatalf("store: %v", st)
			}
			id := str(st.Body, "record", "id")
			if r := tr.Call(t, codex, "memory_update", map[string]any{"id": id, "revision": 1, "changes": map[string]any{"title": "Retries are capped at three"}}); !r.OK {
				t.Fatalf("update: %v", r)
			}
			if r := tr.Call(t, claude, "memory_update", map[string]any{"id": id, "revision": 1, "changes": map[string]any{"content": "stale"}}); r.OK || r.Code != "ABORTED" {
				t.Fatalf("stale update: %v, want ABORTED", r)
			}
			if r := tr.Call(t, td.Tokens["gemini"], "memory_evidence", map[string]any{"id": id, "stance": "corroborates", "note": "saw it in the config"}); !r.OK {
				t.Fatalf("evidence: %v", r)
			}
			if r := tr.Call(t, codex, "memory_evidence", map[string]any{"id": id, "stance": "contradicts"}); !r.OK {
				t.Fatalf("evidence: %v", r)
			}
			if r := tr.Call(t, claude, "memory_search", map[string]any{"namespace": ns, "query": "retries capped"}); !r.OK || len(list(r.Body, "hits")) != 1 {
				t.Fatalf("search: %v", r)
			}
			if r := tr.Call(t, claude, "memory_get", map[string]any{"ids": []string{id}}); !r.OK {
				t.Fatalf("get: %v", r)
			}

			h := tr.Call(t, td.Tokens["aider"], "memory_history", map[string]any{"id": id})
			if !h.OK {
				t.Fatalf("history: %v", h)
			}
			if str(h.Body, "record", "id") != id || num(h.Body, "record", "revision") != 4 || str(h.Body, "record", "title") != "Retries are capped at three" {
				t.Errorf("record %v, want %s at revision 4", get(h.Body, "record"), id)
			}
			want := []string{"codex evidence r4", "gemini evidence r3", "claude-code refuse.conflict r2", "codex update r2", "claude-code store r1"}
			if got := historyLines(h.Body); !slices.Equal(got, want) {
				t.Errorf("entries %q, want %q", got, want)
			}
			if num(h.Body, "total_entries") != 5 || h.Body["truncated"] == true {
				t.Errorf("total_entries %v truncated %v, want 5 and false", h.Body["total_entries"], h.Body["truncated"])
			}
			if d := str(list(h.Body, "entries")[3], "detail"); d != "changed title" {
				t.Errorf("update detail %q", d)
			}
			ev := list(h.Body, "evidence")
			if len(ev) != 2 || str(ev[0], "client") != "gemini" || str(ev[0], "stance") != "corroborates" || str(ev[0], "note") != "saw it in the config" ||
				str(ev[1], "client") != "codex" || str(ev[1], "stance") != "contradicts" || str(ev[1], "at") == "" {
				t.Errorf("evidence %v", ev)
			}
			if num(h.Body, "usage", "returned") != 1 || num(h.Body, "usage", "fetched") != 1 ||
				str(h.Body, "usage", "last_returned_at") == "" || str(h.Body, "usage", "last_fetched_at") == "" {
				t.Errorf("usage %v, want returned 1 fetched 1 with times", get(h.Body, "usage"))
			}
			// Reading a history is not a use.
			again := tr.Call(t, claude, "memory_history", map[string]any{"id": id})
			if fmt.Sprint(get(again.Body, "usage")) != fmt.Sprint(get(h.Body, "usage")) {
				t.Errorf("usage moved from %v to %v on a history read", get(h.Body, "usage"), get(again.Body, "usage"))
			}
			if r := tr.Call(t, claude, "memory_history", map[string]any{"id": id, "limit": 2}); !slices.Equal(historyLines(r.Body), want[:2]) || num(r.Body, "total_entries") != 5 || num(r.Body, "left_out") != 0 {
				t.Errorf("limit 2: %v, want the latest two rows and no left_out (the caller asked for two)", r)
			}
		})
	}
	t.Run("ErrNotFound", func(t *testing.T) {
		for _, tr := range td.Transports() {
			r := tr.Call(t, claude, "memory_history", map[string]any{"id": "01JD3M5ZK9Q8W7E6R5T4Y3X2V1"})
			if r.OK || r.Code != "NOT_FOUND" || r.HTTP != http.StatusNotFound || str(r.Body, "error", "field") != "id" {
				t.Errorf("%s: %v, want NOT_FOUND naming id", tr.Name(), r)
			}
		}
	})
	t.Run("ErrBadID", func(t *testing.T) {
		for _, tr := range td.Transports() {
			r := tr.Call(t, claude, "memory_history", map[string]any{"id": "not-an-id"})
			if r.OK || r.Code != "INVALID_ARGUMENT" || str(r.Body, "error", "field") != "id" {
				t.Errorf("%s: %v, want INVALID_ARGUMENT naming id", tr.Name(), r)
			}
		}
	})
	t.Run("ErrNoToken", func(t *testing.T) {
		r := td.REST.Call(t, "", "memory_history", map[string]any{"id": "01JD3M5ZK9Q8W7E6R5T4Y3X2V1"})
		if r.OK || r.HTTP != http.StatusUnauthorized {
			t.Errorf("%v, want 401", r)
		}
	})
}

// TestMemory_HistoryBudget: a record at its largest with a long history
// comes whole, and its stances and audit rows fill the records budget on
// top of it; what is left out is counted.
func TestMemory_HistoryBudget(t *testing.T) {
	t.Parallel()
	td := servertest.Start(t, witnessOptions())
	claude := td.Tokens["claude-code"]
	rest := td.REST
	st := rest.Call(t, claude, "memory_store", storeArgs("global", "A long record", strings.Repeat("word ", 1150)))
	if !st.OK {
		t.Fatalf("store: %v", st)
	}
	id := str(st.Body, "record", "id")
	rev := 1
	for i := range 60 {
		r := rest.Call(t, claude, "memory_update", map[string]any{"id": id, "revision": rev,
			"changes": map[string]any{"confidence": 0.5 + float64(i%40)/100}})
		if !r.OK {
			t.Fatalf("update %d: %v", i, r)
		}
		rev = int(num(r.Body, "record", "revision"))
	}
	for _, c := range []string{"codex", "gemini", "aider"} {
		if r := rest.Call(t, td.Tokens[c], "memory_evidence", map[string]any{"id": id, "stance": "corroborates", "note": strings.Repeat("n", 480)}); !r.OK {
			t.Fatalf("evidence: %v", r)
		}
	}
	for _, tr := range td.Transports() {
		t.Run(tr.Name(), func(t *testing.T) {
			h := tr.Call(t, claude, "memory_history", map[string]any{"id": id, "limit": 100})
			if !h.OK {
				t.Fatalf("history: %v", h)
			}
			var parts struct{ Record json.RawMessage }
			if err := json.Unmarshal(h.Raw, &parts); err != nil || len(parts.Record) < 4600 {
				t.Fatalf("record: %d bytes (%v), want the long record", len(parts.Record), err)
			}
			maxBytes := 2000*4 + len(parts.Record)
			entries, ev := len(list(h.Body, "entries")), len(list(h.Body, "evidence"))
			offered := 64 + 3 // every audit row (fewer than the limit) and every stance
			if h.Body["truncated"] != true || int(num(h.Body, "left_out")) != offered-entries-ev || entries == 0 || ev != 3 {
				t.Errorf("entries %d evidence %d left_out %v truncated %v, want some rows kept and the rest counted",
					entries, ev, h.Body["left_out"], h.Body["truncated"])
			}
			if num(h.Body, "total_entries") != 64 {
				t.Errorf("total_entries %v, want 64 (store, 60 updates, 3 stances)", h.Body["total_entries"])
			}
			if got := int(num(h.Body, "estimated_tokens")); got > (maxBytes+3)/4 || got < 2000 {
				t.Errorf("estimated_tokens %d, want the 2,000-token budget nearly full on top of the record's %d bytes", got, len(parts.Record))
			}
			if tr.Name() != "grpc" && len(h.Raw) > maxBytes { // gRPC's JSON is the test's own rendering
				t.Errorf("%s: the response is %d bytes, over 8,000 + the record's %d", tr.Name(), len(h.Raw), len(parts.Record))
			}
		})
	}
}

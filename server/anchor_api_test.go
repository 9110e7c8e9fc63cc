package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/hearth-memory/hearth/server/servertest"
	"github.com/hearth-memory/hearth/storage"
)

// TestAnchor_Report holds memory_anchor_report on every transport: a change
// advances the revision once and is audited, a repeat changes nothing, a
// batch is all or nothing, and entity anchors are the sweep's.
func TestAnchor_Report(t *testing.T) {
	t.Parallel()
	td := servertest.Start(t, testOptions())
	tok := td.Tokens["claude-code"]
	rest := td.REST
	for _, tr := range td.Transports() {
		t.Run(tr.Name(), func(t *testing.T) {
			ns := "github/acme/anchors-" + tr.Name()
			rec := must(t, "store", rest.Call(t, tok, "memory_store",
				anchoredArgs(ns, "Helm values", "The chart reads deploy/values.yaml.", "path:deploy/values.yaml", "host:nas", "entity:light.kitchen")))
			id := str(rec, "record", "id")

			t.Run("OK", func(t *testing.T) {
				r := must(t, "report", tr.Call(t, tok, "memory_anchor_report", map[string]any{
					"id": id, "anchor": "path:deploy/values.yaml", "state": "unavailable", "detail": "removed in 3f2a1c"}))
				if num(r, "record", "revision") != 2 || num(r, "changed") != 1 || get(r, "results", 0, "changed") != true {
					t.Errorf("got %v, want the record at revision 2 and one change", r)
				}
				a := anchorState(get(r, "record"), "path:deploy/values.yaml")
				if str(a, "state") != "unavailable" || str(a, "checked_by") != "claude-code" || str(a, "checked_at") == "" {
					t.Errorf("anchor %v", a)
				}
				if n := auditRows(t, td, storage.ActionAnchor, id); n != 1 {
					t.Errorf("%d audit rows, want 1", n)
				}
			})
			t.Run("RepeatChangesNothing", func(t *testing.T) {
				before := must(t, "get", rest.Call(t, tok, "memory_get", map[string]any{"ids": []string{id}}))
				r := must(t, "report", tr.Call(t, tok, "memory_anchor_report", map[string]any{
					"id": id, "anchor": "path:deploy/values.yaml", "state": "unavailable", "detail": "still gone"}))
				if num(r, "record", "revision") != 2 || num(r, "changed") != 0 || get(r, "results", 0, "changed") != false {
					t.Errorf("a repeated report: %v", r)
				}
				after := must(t, "get", rest.Call(t, tok, "memory_get", map[string]any{"ids": []string{id}}))
				b1, _ := json.Marshal(before)
				b2, _ := json.Marshal(after)
				if string(b1) != string(b2) {
					t.Errorf("a repeated report changed the record:\n%s\n%s", b1, b2)
				}
				if n := auditRows(t, td, storage.ActionAnchor, id); n != 1 {
					t.Errorf("%d audit rows, want still 1", n)
				}
			})
			t.Run("Batch", func(t *testing.T) {
				r := must(t, "report", tr.Call(t, tok, "memory_anchor_report", map[string]any{"reports": []any{
					map[string]any{"id": id, "anchor": "host:nas", "state": "available"},
					map[string]any{"id": id, "anchor": "path:deploy/values.yaml", "state": "available"},
				}}))
				if get(r, "record") != nil || num(r, "changed") != 2 || num(r, "results", 1, "revision") != 3 {
					t.Errorf("batch: %v, want two changes and revision 3 (one per call)", r)
				}
			})
			t.Run("ErrBatchAllOrNothing", func(t *testing.T) {
				r := tr.Call(t, tok, "memory_anchor_report", map[string]any{"reports": []any{
					map[string]any{"id": id, "anchor": "host:nas", "state": "unavailable"},
					map[string]any{"id": id, "anchor": "path:no/such.file", "state": "unavailable"},
				}})
				if r.OK || r.Code != "NOT_FOUND" || str(r.Body, "error", "field") != "reports[1].anchor" {
					t.Fatalf("got %v, want NOT_FOUND naming reports[1].anchor", r)
				}
				got := must(t, "get", rest.Call(t, tok, "memory_get", map[string]any{"ids": []string{id}}))
				if s := str(anchorState(get(got, "records", 0), "host:nas"), "state"); s != "available" || num(got, "records", 0, "revision") != 3 {
					t.Errorf("a refused batch wrote: host:nas %s, revision %v", s, num(got, "records", 0, "revision"))
				}
			})
			t.Run("ErrEntity", func(t *testing.T) {
				r := tr.Call(t, tok, "memory_anchor_report", map[string]any{"id": id, "anchor": "entity:light.kitchen", "state": "unavailable"})
				if r.OK || r.Code != "INVALID_ARGUMENT" || str(r.Body, "error", "field") != "anchor" || !strings.Contains(str(r.Body, "error", "message"), "sweep") {
					t.Errorf("got %v, want INVALID_ARGUMENT: entity anchors are the sweep's", r)
				}
			})
			t.Run("ErrState", func(t *testing.T) {
				r := tr.Call(t, tok, "memory_anchor_report", map[string]any{"id": id, "anchor": "host:nas", "state": "unknown"})
				if r.OK || r.Code != "INVALID_ARGUMENT" || str(r.Body, "error", "field") != "state" {
					t.Errorf("got %v, want INVALID_ARGUMENT naming state", r)
				}
			})
		})
	}
	t.Run("ErrAddressClient", func(t *testing.T) {
		r := servertest.MCP{URL: td.URL, Client: dialFrom(readerIP)}.Call(t, "", "memory_anchor_report",
			map[string]any{"id": "01JD3M5ZK9Q8W7E6R5T4Y3X2V1", "anchor": "host:nas", "state": "available"})
		if r.OK || r.HTTP != http.StatusForbidden {
			t.Errorf("an address client reported: %v", r)
		}
	})
}

// TestAnchor_URLCredentialsRefused holds R-S3 on every transport and path
// an anchor comes in by: a url: anchor with userinfo or a credential
// parameter is refused naming the field and pattern, and never stored.
func TestAnchor_URLCredentialsRefused(t *testing.T) {
	t.Parallel()
	td := servertest.Start(t, testOptions())
	tok := td.Tokens["claude-code"]
	rest := td.REST
	id := str(must(t, "store", rest.Call(t, tok, "memory_store",
		anchoredArgs("github/acme/s3", "CI hook", "The deploy hook.", "url:https://ci.example.com/hook"))), "record", "id")
	for _, tr := range td.Transports() {
		for _, bad := range []string{
			"url:https://deploy:Zq8Rt5Wm2Xn7@ci.example.com/hook",
			"url:https://deploy@ci.example.com/hook",
			"url:https://ci.example.com/hook?apiKey=Zq8Rt5Wm2Xn7",
			"url:https://ci.example.com/cb#access_token=Zq8Rt5Wm2Xn7",
		} {
			for _, c := range []struct {
				tool, field string
				args        map[string]any
			}{
				{"memory_store", "anchors[0]", anchoredArgs("github/acme/s3", "t", "c", bad)},
				{"memory_update", "changes.anchors[0]", map[string]any{"id": id, "revision": 1, "changes": map[string]any{"anchors": []string{bad}}}},
				{"memory_anchor_report", "anchor", map[string]any{"id": id, "anchor": bad, "state": "available"}},
			} {
				r := tr.Call(t, tok, c.tool, c.args)
				if r.OK || r.Code != "INVALID_ARGUMENT" || str(r.Body, "error", "field") != c.field || str(r.Body, "error", "pattern") == "" {
					t.Errorf("%s %s %s: got %v, want INVALID_ARGUMENT naming %s and a pattern", tr.Name(), c.tool, bad, r, c.field)
				}
				if strings.Contains(string(r.Raw), "Zq8Rt5Wm2Xn7") {
					t.Errorf("%s %s: the reply echoes the secret", tr.Name(), c.tool)
				}
			}
		}
	}
	// A URL without credentials is kept, parameters and all.
	ok := "url:https://ci.example.com/hook?author=bob&session_count=3"
	if r := rest.Call(t, tok, "memory_store", anchoredArgs("github/acme/s3", "t", "c", ok)); !r.OK {
		t.Errorf("%s refused: %v", ok, r)
	}
}

// TestAnchor_Flags holds R-H2: a record with an unavailable anchor is
// flagged (which anchor, since when) in search hits, memory_get records,
// context packets and bootstrap items, over REST, MCP and gRPC, and is
// neither hidden nor deleted; memory_status lists it.
func TestAnchor_Flags(t *testing.T) {
	t.Parallel()
	td := servertest.Start(t, testOptions())
	tok := td.Tokens["claude-code"]
	rest := td.REST
	ns := "github/acme/flags"
	flagged := str(must(t, "store", rest.Call(t, tok, "memory_store", anchoredArgs(ns, "Garage door sensor",
		"The garage door sensor reports through the NAS bridge.", "host:nas", "path:bridge/config.yaml"))), "record", "id")
	plain := str(must(t, "store", rest.Call(t, tok, "memory_store", anchoredArgs(ns, "Garage lights",
		"The garage lights follow the door sensor.", "host:hub"))), "record", "id")
	r := must(t, "report", rest.Call(t, tok, "memory_anchor_report", map[string]any{"reports": []any{
		map[string]any{"id": flagged, "anchor": "path:bridge/config.yaml", "state": "unavailable", "detail": "file removed"},
		map[string]any{"id": flagged, "anchor": "host:nas", "state": "unavailable", "detail": "no ping"},
		map[string]any{"id": plain, "anchor": "host:hub", "state": "available"},
	}}))
	if num(r, "changed") != 3 {
		t.Fatalf("reports: %v", r)
	}
	since := str(must(t, "get", rest.Call(t, tok, "memory_get", map[string]any{"ids": []string{flagged}})), "records", 0, "anchors", 0, "checked_at")
	if since == "" {
		t.Fatal("no checked_at on the reported anchor")
	}
	// The flag names the record's first unavailable anchor in its own order.
	wantFlag := map[string]any{"anchor": "host:nas", "since": since, "count": float64(2)}
	checkFlag := func(t *testing.T, where string, item any, want map[string]any) {
		t.Helper()
		got, _ := get(item, "unavailable").(map[string]any)
		if want == nil {
			if got != nil {
				t.Errorf("%s: flagged %v, want no flag", where, got)
			}
			return
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: flag %v, want %v", where, got, want)
		}
	}
	for _, tr := range td.Transports() {
		t.Run(tr.Name(), func(t *testing.T) {
			hits := must(t, "search", tr.Call(t, tok, "memory_search", map[string]any{"namespace": ns, "query": "garage door sensor"}))
			if len(list(hits, "hits")) != 2 {
				t.Fatalf("hits %v: flagged records must not be hidden", hits)
			}
			for _, h := range list(hits, "hits") {
				switch str(h, "id") {
				case flagged:
					checkFlag(t, "hit", h, wantFlag)
				case plain:
					checkFlag(t, "plain hit", h, nil)
				}
			}
			recs := must(t, "get", tr.Call(t, tok, "memory_get", map[string]any{"ids": []string{flagged}}))
			a := anchorState(get(recs, "records", 0), "host:nas")
			if str(a, "state") != "unavailable" || str(a, "checked_at") == "" || str(a, "checked_by") != "claude-code" {
				t.Errorf("record anchor %v", a)
			}
			packet := must(t, "context", tr.Call(t, tok, "memory_context", map[string]any{"namespace": ns, "task": "fix the garage door sensor"}))
			found := false
			for _, rec := range list(packet, "records") {
				if str(rec, "id") == flagged {
					found = str(anchorState(rec, "host:nas"), "state") == "unavailable"
				}
			}
			if !found {
				t.Errorf("context packet does not carry the flagged record with its unavailable anchor: %v", packet)
			}
			boot := must(t, "bootstrap", tr.Call(t, tok, "memory_bootstrap", map[string]any{"namespace": ns}))
			seen := false
			for _, it := range list(boot, "items") {
				if str(it, "id") == flagged {
					seen = true
					if str(it, "reason") != "anchor-unavailable" {
						t.Errorf("bootstrap reason %q", str(it, "reason"))
					}
					checkFlag(t, "bootstrap item", it, wantFlag)
				}
				if str(it, "id") == plain {
					checkFlag(t, "plain item", it, nil)
				}
			}
			if !seen {
				t.Errorf("bootstrap does not list the flagged record: %v", boot)
			}
			st := must(t, "status", tr.Call(t, tok, "memory_status", map[string]any{}))
			if num(st, "flagged_total") != 1 || str(st, "flagged", 0, "id") != flagged || str(st, "flagged", 0, "detail") != "no ping" {
				t.Errorf("status: flagged %v total %v", get(st, "flagged"), get(st, "flagged_total"))
			}
			checkFlag(t, "status", get(st, "flagged", 0), wantFlag)
		})
	}
}

// TestAnchor_NoHomeAssistant holds R-H3: without SUPERVISOR_TOKEN the sweep
// says there is no Home Assistant and entity anchors stay unknown.
func TestAnchor_NoHomeAssistant(t *testing.T) {
	t.Parallel()
	td := servertest.Start(t, testOptions())
	tok := td.Tokens["claude-code"]
	id := str(must(t, "store", td.REST.Call(t, tok, "memory_store",
		anchoredArgs("global", "Kitchen", "The kitchen light.", "entity:light.kitchen"))), "record", "id")
	for _, tr := range td.Transports() {
		s := must(t, "sweep", tr.Call(t, tok, "memory_anchor_sweep", map[string]any{}))
		if s["home_assistant"] != false || s["unreachable"] != false || num(s, "checked") != 0 || num(s, "unknown") != 1 ||
			!strings.Contains(str(s, "detail"), "SUPERVISOR_TOKEN") {
			t.Errorf("%s: sweep %v", tr.Name(), s)
		}
	}
	rec := must(t, "get", td.REST.Call(t, tok, "memory_get", map[string]any{"ids": []string{id}}))
	if a := anchorState(get(rec, "records", 0), "entity:light.kitchen"); str(a, "state") != "unknown" || num(rec, "records", 0, "revision") != 1 {
		t.Errorf("record %v", rec)
	}
	// Nothing is scheduled without Home Assistant, and status says why.
	st := must(t, "status", td.REST.Call(t, tok, "memory_status", map[string]any{}))
	if st["home_assistant"] != false || get(st, "next_sweep_at") != nil || get(st, "last_sweep", "home_assistant") != false {
		t.Errorf("status: home_assistant %v, next %v, last %v", st["home_assistant"], get(st, "next_sweep_at"), get(st, "last_sweep"))
	}
}

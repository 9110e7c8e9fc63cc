package main

// Anchors end to end (docs/design.md §11, R-H1..R-H3, R-S3, R-B6): reports and sweeps
// through every transport of a real daemon, the sweep reading a test
// Supervisor over TCP, and the flags in hits, records, context packets,
// bootstrap and memory_status.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hearth-memory/hearth/server/homeassistant/hatest"
	"github.com/hearth-memory/hearth/server/options"
	"github.com/hearth-memory/hearth/storage"
)

const supervisorToken = "supervisor-token-e2e-4c1d"

// startHADaemon runs a daemon inside a (test) Home Assistant: its
// SUPERVISOR_TOKEN is the test Supervisor's, and the sweep reads ha.
func startHADaemon(tb testing.TB, ha *hatest.Server, opts options.Options) *testDaemon {
	tb.Helper()
	return openDaemon(tb, &Daemon{Config: Config{DataDir: tb.TempDir(), Options: opts,
		SupervisorToken: ha.Token, SupervisorURL: ha.URL}}, true)
}

// anchorState returns the state of anchor in a record's JSON.
func anchorState(rec any, anchor string) map[string]any {
	for _, a := range list(rec, "anchors") {
		if str(a, "anchor") == anchor {
			return a.(map[string]any)
		}
	}
	return nil
}

// auditRows counts the audit rows of action for record id.
func auditRows(tb testing.TB, td *testDaemon, action storage.Action, id string) int {
	tb.Helper()
	n := 0
	for _, e := range auditEntries(tb, td.db, action) {
		if e.RecordID == id {
			n++
		}
	}
	return n
}

// TestAnchor_Report holds memory_anchor_report on every transport: a change
// advances the revision once and is audited, a repeat changes nothing, a
// batch is all or nothing, and entity anchors are the sweep's.
func TestAnchor_Report(t *testing.T) {
	td := startDaemon(t, testOptions())
	tok := td.tokens["claude-code"]
	rest := restTransport{td}
	for _, tr := range transports(td) {
		t.Run(tr.name(), func(t *testing.T) {
			ns := "github/acme/anchors-" + tr.name()
			rec := must(t, "store", rest.call(t, tok, "memory_store",
				anchoredArgs(ns, "Helm values", "The chart reads deploy/values.yaml.", "path:deploy/values.yaml", "host:nas", "entity:light.kitchen")))
			id := str(rec, "record", "id")

			t.Run("OK", func(t *testing.T) {
				r := must(t, "report", tr.call(t, tok, "memory_anchor_report", map[string]any{
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
				before := must(t, "get", rest.call(t, tok, "memory_get", map[string]any{"ids": []string{id}}))
				r := must(t, "report", tr.call(t, tok, "memory_anchor_report", map[string]any{
					"id": id, "anchor": "path:deploy/values.yaml", "state": "unavailable", "detail": "still gone"}))
				if num(r, "record", "revision") != 2 || num(r, "changed") != 0 || get(r, "results", 0, "changed") != false {
					t.Errorf("a repeated report: %v", r)
				}
				after := must(t, "get", rest.call(t, tok, "memory_get", map[string]any{"ids": []string{id}}))
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
				r := must(t, "report", tr.call(t, tok, "memory_anchor_report", map[string]any{"reports": []any{
					map[string]any{"id": id, "anchor": "host:nas", "state": "available"},
					map[string]any{"id": id, "anchor": "path:deploy/values.yaml", "state": "available"},
				}}))
				if get(r, "record") != nil || num(r, "changed") != 2 || num(r, "results", 1, "revision") != 3 {
					t.Errorf("batch: %v, want two changes and revision 3 (one per call)", r)
				}
			})
			t.Run("ErrBatchAllOrNothing", func(t *testing.T) {
				r := tr.call(t, tok, "memory_anchor_report", map[string]any{"reports": []any{
					map[string]any{"id": id, "anchor": "host:nas", "state": "unavailable"},
					map[string]any{"id": id, "anchor": "path:no/such.file", "state": "unavailable"},
				}})
				if r.ok || r.code != "NOT_FOUND" || str(r.body, "error", "field") != "reports[1].anchor" {
					t.Fatalf("got %v, want NOT_FOUND naming reports[1].anchor", r)
				}
				got := must(t, "get", rest.call(t, tok, "memory_get", map[string]any{"ids": []string{id}}))
				if s := str(anchorState(get(got, "records", 0), "host:nas"), "state"); s != "available" || num(got, "records", 0, "revision") != 3 {
					t.Errorf("a refused batch wrote: host:nas %s, revision %v", s, num(got, "records", 0, "revision"))
				}
			})
			t.Run("ErrEntity", func(t *testing.T) {
				r := tr.call(t, tok, "memory_anchor_report", map[string]any{"id": id, "anchor": "entity:light.kitchen", "state": "unavailable"})
				if r.ok || r.code != "INVALID_ARGUMENT" || str(r.body, "error", "field") != "anchor" || !strings.Contains(str(r.body, "error", "message"), "sweep") {
					t.Errorf("got %v, want INVALID_ARGUMENT: entity anchors are the sweep's", r)
				}
			})
			t.Run("ErrState", func(t *testing.T) {
				r := tr.call(t, tok, "memory_anchor_report", map[string]any{"id": id, "anchor": "host:nas", "state": "unknown"})
				if r.ok || r.code != "INVALID_ARGUMENT" || str(r.body, "error", "field") != "state" {
					t.Errorf("got %v, want INVALID_ARGUMENT naming state", r)
				}
			})
		})
	}
	t.Run("ErrAddressClient", func(t *testing.T) {
		r := mcpTransport{td: td, client: dialFrom(readerIP)}.call(t, "", "memory_anchor_report",
			map[string]any{"id": "01JD3M5ZK9Q8W7E6R5T4Y3X2V1", "anchor": "host:nas", "state": "available"})
		if r.ok || r.http != http.StatusForbidden {
			t.Errorf("an address client reported: %v", r)
		}
	})
}

// TestAnchor_URLCredentialsRefused holds R-S3 on every transport and path
// an anchor comes in by: a url: anchor with userinfo or a credential
// parameter is refused naming the field and pattern, and never stored.
func TestAnchor_URLCredentialsRefused(t *testing.T) {
	td := startDaemon(t, testOptions())
	tok := td.tokens["claude-code"]
	rest := restTransport{td}
	id := str(must(t, "store", rest.call(t, tok, "memory_store",
		anchoredArgs("github/acme/s3", "CI hook", "The deploy hook.", "url:https://ci.example.com/hook"))), "record", "id")
	for _, tr := range transports(td) {
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
				r := tr.call(t, tok, c.tool, c.args)
				if r.ok || r.code != "INVALID_ARGUMENT" || str(r.body, "error", "field") != c.field || str(r.body, "error", "pattern") == "" {
					t.Errorf("%s %s %s: got %v, want INVALID_ARGUMENT naming %s and a pattern", tr.name(), c.tool, bad, r, c.field)
				}
				if strings.Contains(string(r.raw), "Zq8Rt5Wm2Xn7") {
					t.Errorf("%s %s: the reply echoes the secret", tr.name(), c.tool)
				}
			}
		}
	}
	// A URL without credentials is kept, parameters and all.
	ok := "url:https://ci.example.com/hook?author=bob&session_count=3"
	if r := rest.call(t, tok, "memory_store", anchoredArgs("github/acme/s3", "t", "c", ok)); !r.ok {
		t.Errorf("%s refused: %v", ok, r)
	}
}

// TestAnchor_Flags holds R-H2: a record with an unavailable anchor is
// flagged (which anchor, since when) in search hits, memory_get records,
// context packets and bootstrap items, over REST, MCP and gRPC, and is
// neither hidden nor deleted; memory_status lists it.
func TestAnchor_Flags(t *testing.T) {
	td := startDaemon(t, testOptions())
	tok := td.tokens["claude-code"]
	rest := restTransport{td}
	ns := "github/acme/flags"
	flagged := str(must(t, "store", rest.call(t, tok, "memory_store", anchoredArgs(ns, "Garage door sensor",
		"The garage door sensor reports through the NAS bridge.", "host:nas", "path:bridge/config.yaml"))), "record", "id")
	plain := str(must(t, "store", rest.call(t, tok, "memory_store", anchoredArgs(ns, "Garage lights",
		"The garage lights follow the door sensor.", "host:hub"))), "record", "id")
	r := must(t, "report", rest.call(t, tok, "memory_anchor_report", map[string]any{"reports": []any{
		map[string]any{"id": flagged, "anchor": "path:bridge/config.yaml", "state": "unavailable", "detail": "file removed"},
		map[string]any{"id": flagged, "anchor": "host:nas", "state": "unavailable", "detail": "no ping"},
		map[string]any{"id": plain, "anchor": "host:hub", "state": "available"},
	}}))
	if num(r, "changed") != 3 {
		t.Fatalf("reports: %v", r)
	}
	since := str(must(t, "get", rest.call(t, tok, "memory_get", map[string]any{"ids": []string{flagged}})), "records", 0, "anchors", 0, "checked_at")
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
	for _, tr := range transports(td) {
		t.Run(tr.name(), func(t *testing.T) {
			hits := must(t, "search", tr.call(t, tok, "memory_search", map[string]any{"namespace": ns, "query": "garage door sensor"}))
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
			recs := must(t, "get", tr.call(t, tok, "memory_get", map[string]any{"ids": []string{flagged}}))
			a := anchorState(get(recs, "records", 0), "host:nas")
			if str(a, "state") != "unavailable" || str(a, "checked_at") == "" || str(a, "checked_by") != "claude-code" {
				t.Errorf("record anchor %v", a)
			}
			packet := must(t, "context", tr.call(t, tok, "memory_context", map[string]any{"namespace": ns, "task": "fix the garage door sensor"}))
			found := false
			for _, rec := range list(packet, "records") {
				if str(rec, "id") == flagged {
					found = str(anchorState(rec, "host:nas"), "state") == "unavailable"
				}
			}
			if !found {
				t.Errorf("context packet does not carry the flagged record with its unavailable anchor: %v", packet)
			}
			boot := must(t, "bootstrap", tr.call(t, tok, "memory_bootstrap", map[string]any{"namespace": ns}))
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
			st := must(t, "status", tr.call(t, tok, "memory_status", map[string]any{}))
			if num(st, "flagged_total") != 1 || str(st, "flagged", 0, "id") != flagged || str(st, "flagged", 0, "detail") != "no ping" {
				t.Errorf("status: flagged %v total %v", get(st, "flagged"), get(st, "flagged_total"))
			}
			checkFlag(t, "status", get(st, "flagged", 0), wantFlag)
		})
	}
}

// TestAnchor_Sweep holds every sweep outcome through the daemon and
// memory_anchor_sweep, the daemon reading a test Supervisor over TCP with
// the token it was started with.
func TestAnchor_Sweep(t *testing.T) {
	ha := hatest.New(t, supervisorToken)
	ha.Set("binary_sensor.garage_door", "off")
	ha.Set("light.kitchen", "on")
	ha.Set("sensor.outdoor", "unknown")
	opts := testOptions()
	opts.ReviewAt.Off = true
	td := startHADaemon(t, ha, opts)
	tok := td.tokens["claude-code"]
	rest := restTransport{td}
	ns := "topics/home-assistant"
	store := func(title string, anchors ...string) string {
		return str(must(t, "store", rest.call(t, tok, "memory_store", anchoredArgs(ns, title, title+" in the house.", anchors...))), "record", "id")
	}
	door := store("Garage door", "entity:binary_sensor.garage_door")
	kitchen := store("Kitchen light", "entity:light.kitchen")
	outdoor := store("Outdoor temperature", "entity:sensor.outdoor")
	renamed := store("Porch switch", "entity:switch.porch")
	revision := func(id string) float64 {
		return num(must(t, "get", rest.call(t, tok, "memory_get", map[string]any{"ids": []string{id}})), "records", 0, "revision")
	}
	// The sweep scheduled at start may already have run: wait for it, so
	// that the calls below are the only writers.
	waitFor(t, "the condition", func() bool {
		st := must(t, "status", rest.call(t, tok, "memory_status", map[string]any{}))
		return get(st, "last_sweep") != nil && get(st, "next_sweep_at") != nil
	})

	for _, tr := range transports(td) {
		t.Run(tr.name(), func(t *testing.T) {
			ha.Set("light.kitchen", "on")
			ha.Set("switch.porch", "on")
			ha.Fail(0)
			must(t, "sweep", tr.call(t, tok, "memory_anchor_sweep", map[string]any{}))

			t.Run("OK", func(t *testing.T) {
				// The kitchen light goes unavailable, the porch switch is renamed.
				ha.Set("light.kitchen", "unavailable")
				ha.Remove("switch.porch")
				revs := map[string]float64{door: revision(door), kitchen: revision(kitchen), outdoor: revision(outdoor), renamed: revision(renamed)}
				before := len(ha.Requests())
				s := must(t, "sweep", tr.call(t, tok, "memory_anchor_sweep", map[string]any{}))
				if s["home_assistant"] != true || s["unreachable"] != false || num(s, "checked") != 4 || num(s, "changed") != 2 ||
					num(s, "available") != 1 || num(s, "unavailable") != 3 || num(s, "unknown") != 0 || str(s, "swept_at") == "" {
					t.Errorf("sweep %v", s)
				}
				if n := len(ha.Requests()) - before; n != 1 {
					t.Errorf("%d requests to Home Assistant, want 1", n)
				}
				for id, want := range map[string]float64{door: revs[door], kitchen: revs[kitchen] + 1, outdoor: revs[outdoor], renamed: revs[renamed] + 1} {
					if got := revision(id); got != want {
						t.Errorf("%s: revision %v, want %v", id, got, want)
					}
				}
				rec := must(t, "get", rest.call(t, tok, "memory_get", map[string]any{"ids": []string{kitchen}}))
				if a := anchorState(get(rec, "records", 0), "entity:light.kitchen"); str(a, "state") != "unavailable" || str(a, "checked_by") != "sweep" {
					t.Errorf("kitchen anchor %v", a)
				}
				st := must(t, "status", rest.call(t, tok, "memory_status", map[string]any{}))
				if st["home_assistant"] != true || str(st, "last_sweep", "requested_by") != "claude-code" || num(st, "last_sweep", "changed") != 2 || num(st, "flagged_total") != 3 {
					t.Errorf("status: last sweep %v, flagged %v", get(st, "last_sweep"), get(st, "flagged_total"))
				}
			})
			for _, c := range []struct {
				name   string
				break_ func()
				want   string
			}{
				{"Err502", func() { ha.Fail(http.StatusBadGateway) }, "HTTP 502"},
				{"Err401", func() { ha.Fail(http.StatusUnauthorized) }, "HTTP 401"},
			} {
				t.Run(c.name, func(t *testing.T) {
					// Everything comes back, but Home Assistant cannot say so.
					ha.Set("light.kitchen", "on")
					ha.Set("switch.porch", "on")
					c.break_()
					defer ha.Fail(0)
					before := must(t, "get", rest.call(t, tok, "memory_get", map[string]any{"ids": []string{door, kitchen, outdoor, renamed}}))
					s := must(t, "sweep", tr.call(t, tok, "memory_anchor_sweep", map[string]any{}))
					if s["unreachable"] != true || s["home_assistant"] != true || num(s, "checked") != 0 || num(s, "changed") != 0 ||
						!strings.Contains(str(s, "detail"), c.want) || num(s, "unavailable") != 3 {
						t.Errorf("sweep %v, want unreachable (%s) with nothing changed", s, c.want)
					}
					after := must(t, "get", rest.call(t, tok, "memory_get", map[string]any{"ids": []string{door, kitchen, outdoor, renamed}}))
					b1, _ := json.Marshal(before)
					b2, _ := json.Marshal(after)
					if string(b1) != string(b2) {
						t.Errorf("an unreachable sweep changed records:\n%s\n%s", b1, b2)
					}
					st := must(t, "status", rest.call(t, tok, "memory_status", map[string]any{}))
					if get(st, "last_sweep", "unreachable") != true {
						t.Errorf("status does not show the unreachable sweep: %v", get(st, "last_sweep"))
					}
					if strings.Contains(str(st, "last_sweep", "detail"), supervisorToken) {
						t.Error("the token is shown")
					}
				})
			}
		})
	}
}

// TestAnchor_NoHomeAssistant holds R-H3: without SUPERVISOR_TOKEN the sweep
// says there is no Home Assistant and entity anchors stay unknown.
func TestAnchor_NoHomeAssistant(t *testing.T) {
	td := startDaemon(t, testOptions())
	tok := td.tokens["claude-code"]
	id := str(must(t, "store", restTransport{td}.call(t, tok, "memory_store",
		anchoredArgs("global", "Kitchen", "The kitchen light.", "entity:light.kitchen"))), "record", "id")
	for _, tr := range transports(td) {
		s := must(t, "sweep", tr.call(t, tok, "memory_anchor_sweep", map[string]any{}))
		if s["home_assistant"] != false || s["unreachable"] != false || num(s, "checked") != 0 || num(s, "unknown") != 1 ||
			!strings.Contains(str(s, "detail"), "SUPERVISOR_TOKEN") {
			t.Errorf("%s: sweep %v", tr.name(), s)
		}
	}
	rec := must(t, "get", restTransport{td}.call(t, tok, "memory_get", map[string]any{"ids": []string{id}}))
	if a := anchorState(get(rec, "records", 0), "entity:light.kitchen"); str(a, "state") != "unknown" || num(rec, "records", 0, "revision") != 1 {
		t.Errorf("record %v", rec)
	}
	// Nothing is scheduled without Home Assistant, and status says why.
	st := must(t, "status", restTransport{td}.call(t, tok, "memory_status", map[string]any{}))
	if st["home_assistant"] != false || get(st, "next_sweep_at") != nil || get(st, "last_sweep", "home_assistant") != false {
		t.Errorf("status: home_assistant %v, next %v, last %v", st["home_assistant"], get(st, "next_sweep_at"), get(st, "last_sweep"))
	}
}

// TestAnchor_ScheduledSweep holds the durable schedule in a running daemon:
// the first sweep runs at start, as the system client.
func TestAnchor_ScheduledSweep(t *testing.T) {
	ha := hatest.New(t, supervisorToken)
	ha.Set("light.kitchen", "unavailable")
	opts := testOptions()
	opts.ReviewAt.Off = true
	opts.AnchorSweepHours = 1
	dir := t.TempDir()
	// A record exists before the start: the first sweep flags it.
	td := openDaemon(t, &Daemon{Config: Config{DataDir: dir, Options: opts}}, false)
	tok := td.tokens["claude-code"]
	id := str(must(t, "store", restTransport{td}.call(t, tok, "memory_store",
		anchoredArgs("global", "Kitchen", "The kitchen light.", "entity:light.kitchen"))), "record", "id")
	closeDaemon(t, td)

	td = openDaemon(t, &Daemon{Config: Config{DataDir: dir, Options: opts, SupervisorToken: ha.Token, SupervisorURL: ha.URL}}, true)
	var st map[string]any
	waitFor(t, "the condition", func() bool {
		st = must(t, "status", restTransport{td}.call(t, tok, "memory_status", map[string]any{}))
		return get(st, "last_sweep", "home_assistant") == true
	})
	if str(st, "last_sweep", "requested_by") != storage.SystemClient || num(st, "flagged_total") != 1 || str(st, "flagged", 0, "id") != id {
		t.Errorf("status after the scheduled sweep: %v", st)
	}
	next, err := time.Parse(time.RFC3339, str(st, "next_sweep_at"))
	swept, _ := time.Parse(time.RFC3339, str(st, "last_sweep", "swept_at"))
	if err != nil || !next.Equal(swept.Add(time.Hour)) {
		t.Errorf("next sweep %v, want an hour after %v", str(st, "next_sweep_at"), swept)
	}
}

// BenchmarkAnchorReport posts one memory_anchor_report of 100 reports (50
// records, two path anchors each) over REST to a real daemon, every anchor
// changing state each time: 100 anchor updates, 50 revisions and 50 audit
// rows in one transaction, with the request's validation and screening.
func BenchmarkAnchorReport(b *testing.B) {
	td := startDaemon(b, testOptions())
	tok := td.tokens["claude-code"]
	rest := restTransport{td}
	var reports []map[string]any
	for i := range 50 {
		a, c := fmt.Sprintf("path:src/a%d.go", i), fmt.Sprintf("path:src/b%d.go", i)
		id := str(must(b, "store", rest.call(b, tok, "memory_store", anchoredArgs("github/acme/bench", fmt.Sprintf("r%d", i), "c", a, c))), "record", "id")
		reports = append(reports, map[string]any{"id": id, "anchor": a, "detail": "checked by the hook"},
			map[string]any{"id": id, "anchor": c, "detail": "checked by the hook"})
	}
	state := "available"
	for b.Loop() {
		state = map[string]string{"available": "unavailable", "unavailable": "available"}[state]
		for _, r := range reports {
			r["state"] = state
		}
		r := rest.call(b, tok, "memory_anchor_report", map[string]any{"reports": reports})
		if !r.ok || num(r.body, "changed") != 100 {
			b.Fatalf("report: %v", r)
		}
	}
}

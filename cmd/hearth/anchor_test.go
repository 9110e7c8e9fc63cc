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
	"github.com/hearth-memory/hearth/storage/testwait"
)

const supervisorToken = "supervisor-token-e2e-4c1d"

// startHADaemon runs a daemon inside a (test) Home Assistant: its
// SUPERVISOR_TOKEN is the test Supervisor's, and the sweep reads ha.
func startHADaemon(tb testing.TB, ha *hatest.Server, opts options.Options) *testDaemon {
	tb.Helper()
	return openDaemon(tb, &Daemon{Config: Config{DataDir: tb.TempDir(), Options: opts,
		SupervisorToken: ha.Token, SupervisorURL: ha.URL}}, true)
}

// TestAnchor_Sweep holds every sweep outcome through the daemon and
// memory_anchor_sweep, the daemon reading a test Supervisor over TCP with
// the token it was started with.
func TestAnchor_Sweep(t *testing.T) {
	t.Parallel()
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
	testwait.WaitFor(t, "the condition", func() bool {
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

// TestAnchor_ScheduledSweep holds the durable schedule in a running daemon:
// the first sweep runs at start, as the system client.
func TestAnchor_ScheduledSweep(t *testing.T) {
	t.Parallel()
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
	testwait.WaitFor(t, "the condition", func() bool {
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

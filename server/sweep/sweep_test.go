package sweep_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hearth-memory/hearth/server/homeassistant"
	"github.com/hearth-memory/hearth/server/homeassistant/hatest"
	"github.com/hearth-memory/hearth/server/sweep"
	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/storagetest"
)

const token = "supervisor-token-51c0"

var ctx = context.Background()

func sweeper(tb testing.TB, ha *hatest.Server, timeout time.Duration) *sweep.Sweeper {
	tb.Helper()
	c, err := homeassistant.New(homeassistant.Config{URL: ha.URL, Token: ha.Token, Timeout: timeout})
	if err != nil {
		tb.Fatal(err)
	}
	return sweep.New(c)
}

// store stores a record anchored to entities.
func store(tb testing.TB, db *storage.DB, title string, anchors ...string) *storage.Record {
	tb.Helper()
	return storagetest.Store(tb, db, storage.NewRecord{Title: storagetest.Text(tb, title), Anchors: storagetest.Texts(tb, anchors...)})
}

func record(tb testing.TB, db *storage.DB, id string) *storage.Record {
	tb.Helper()
	recs, err := db.Get(ctx, []string{id})
	if err != nil || len(recs) != 1 {
		tb.Fatalf("get %s: %v", id, err)
	}
	return recs[0]
}

// TestSweeper_Run holds every outcome of a sweep, with the real client
// reading the test Supervisor over TCP and the real store.
func TestSweeper_Run(t *testing.T) {
	t.Parallel()
	t.Run("OK", func(t *testing.T) {
		db := storagetest.Open(t)
		ha := hatest.New(t, token)
		ha.Set("binary_sensor.garage_door", "off")
		ha.Set("light.kitchen", "unavailable")
		ha.Set("sensor.outdoor", "unknown")
		ha.Set("sensor.other", "12")
		door := store(t, db, "door", "entity:binary_sensor.garage_door")
		kitchen := store(t, db, "kitchen", "entity:light.kitchen")
		outdoor := store(t, db, "outdoor", "entity:sensor.outdoor")
		renamed := store(t, db, "renamed", "entity:switch.old_name", "path:ha/switches.yaml")
		sw := sweeper(t, ha, 0)

		s, err := sw.Run(ctx, db, "claude-code")
		if err != nil {
			t.Fatal(err)
		}
		if !s.HomeAssistant || s.Unreachable || s.Checked != 4 || s.Changed != 4 || s.Available != 1 || s.Unavailable != 3 || s.Unknown != 0 {
			t.Errorf("sweep: %+v", *s)
		}
		for _, c := range []struct {
			r      *storage.Record
			state  string
			detail string
		}{
			{door, storage.AnchorAvailable, ""},
			{kitchen, storage.AnchorUnavailable, "state unavailable"},
			{outdoor, storage.AnchorUnavailable, "state unknown"},
			{renamed, storage.AnchorUnavailable, sweep.NotFound},
		} {
			a := record(t, db, c.r.ID).Anchors[0]
			if a.State != c.state || a.Detail != c.detail || a.CheckedBy != storage.SweepChecker {
				t.Errorf("%s: got %+v, want %s (%s) by sweep", c.r.Title, a, c.state, c.detail)
			}
			if rev := record(t, db, c.r.ID).Revision; rev != 2 {
				t.Errorf("%s: revision %d, want 2", c.r.Title, rev)
			}
		}
		if got := record(t, db, renamed.ID).Anchors[1]; got.State != storage.AnchorUnknown {
			t.Errorf("the path anchor was swept: %+v", got)
		}
		if n := len(ha.Requests()); n != 1 {
			t.Errorf("%d requests to Home Assistant, want 1", n)
		}

		// The kitchen light comes back; nothing else changes.
		ha.Set("light.kitchen", "on")
		s, err = sw.Run(ctx, db, storage.SystemClient)
		if err != nil || s.Changed != 1 || s.Available != 2 {
			t.Fatalf("second sweep: %+v, %v", s, err)
		}
		if rev := record(t, db, kitchen.ID).Revision; rev != 3 {
			t.Errorf("kitchen: revision %d, want 3", rev)
		}
		if rev := record(t, db, door.ID).Revision; rev != 2 {
			t.Errorf("door: revision %d, want 2 (unchanged)", rev)
		}
	})

	// Unreachable: 401, 502, a hung answer, a closed port. Nothing changes.
	for _, c := range []struct {
		name   string
		break_ func(ha *hatest.Server) *hatest.Server
		token  string
		want   string
	}{
		{"Err401", func(ha *hatest.Server) *hatest.Server { return ha }, "wrong", "HTTP 401"},
		{"Err502", func(ha *hatest.Server) *hatest.Server { ha.Fail(http.StatusBadGateway); return ha }, token, "HTTP 502"},
		{"ErrTimeout", func(ha *hatest.Server) *hatest.Server { ha.Hang(true); return ha }, token, "no answer within"},
		{"ErrConnection", func(ha *hatest.Server) *hatest.Server { ha.Close(); return ha }, token, "cannot connect"},
	} {
		t.Run(c.name, func(t *testing.T) {
			db := storagetest.Open(t)
			ha := hatest.New(t, token)
			ha.Set("light.kitchen", "on")
			r := store(t, db, "kitchen", "entity:light.kitchen", "entity:light.gone")
			if _, err := sweeper(t, ha, 0).Run(ctx, db, storage.SystemClient); err != nil {
				t.Fatal(err)
			}
			before := record(t, db, r.ID)
			// Now every entity is gone, but Home Assistant cannot say so.
			ha.Remove("light.kitchen")
			c.break_(ha)
			c2, err := homeassistant.New(homeassistant.Config{URL: ha.URL, Token: c.token, Timeout: 300 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			audit, _ := db.AuditLog(ctx, 100)
			s, err := sweep.New(c2).Run(ctx, db, storage.SystemClient)
			if err != nil {
				t.Fatal(err)
			}
			if !s.HomeAssistant || !s.Unreachable || s.Checked != 0 || s.Changed != 0 || !strings.Contains(s.Detail, c.want) {
				t.Errorf("sweep: %+v, want unreachable with %q", *s, c.want)
			}
			if s.Available != 1 || s.Unavailable != 1 {
				t.Errorf("counts %+v, want the states as they were (1 available, 1 unavailable)", *s)
			}
			after := record(t, db, r.ID)
			if after.Revision != before.Revision || after.Anchors[0] != before.Anchors[0] || after.Anchors[1] != before.Anchors[1] {
				t.Errorf("unreachable sweep changed the record:\nbefore %+v\nafter  %+v", before, after)
			}
			if audit2, _ := db.AuditLog(ctx, 100); len(audit2) != len(audit) {
				t.Errorf("unreachable sweep wrote %d audit rows", len(audit2)-len(audit))
			}
			if last, _ := db.LastSweep(ctx); last == nil || !last.Unreachable {
				t.Errorf("the unreachable sweep is not recorded: %+v", last)
			}
		})
	}

	t.Run("NoHomeAssistant", func(t *testing.T) {
		db := storagetest.Open(t)
		r := store(t, db, "kitchen", "entity:light.kitchen")
		s, err := sweep.New(nil).Run(ctx, db, "claude-code")
		if err != nil {
			t.Fatal(err)
		}
		if s.HomeAssistant || s.Unreachable || s.Checked != 0 || s.Unknown != 1 || s.Detail != sweep.NoHomeAssistant {
			t.Errorf("sweep: %+v", *s)
		}
		if got := record(t, db, r.ID); got.Revision != 1 || got.Anchors[0].State != storage.AnchorUnknown {
			t.Errorf("record: %+v", got)
		}
	})

	t.Run("ErrCanceled", func(t *testing.T) {
		db := storagetest.Open(t)
		ha := hatest.New(t, token)
		ha.Hang(true)
		c, cancel := context.WithCancel(ctx)
		go func() {
			for len(ha.Requests()) == 0 {
				time.Sleep(time.Millisecond)
			}
			cancel()
		}()
		if _, err := sweeper(t, ha, time.Minute).Run(c, db, storage.SystemClient); err == nil {
			t.Fatal("a canceled sweep was recorded")
		}
		if last, _ := db.LastSweep(ctx); last != nil {
			t.Errorf("recorded %+v", last)
		}
	})
}

// BenchmarkSweep sweeps 5,000 entity anchors against the test Supervisor
// over TCP: steady, where nothing changes, and flip, where every anchor
// changes state each time (5,000 anchor updates, revisions and audit rows),
// on notes (which move in and out of the session-start packet's third
// section) and on durable records (which keep their place). One request per
// sweep either way. cpu-ms/op is the process's CPU time per sweep, which a
// loaded machine does not inflate as it does ns/op.
func BenchmarkSweep(b *testing.B) {
	const n = 5000
	for _, c := range []struct {
		name string
		flip bool
		typ  string
	}{
		{"steady", false, storage.TypeNote},
		{"flip", true, storage.TypeNote},
		{"flip-durable", true, storage.TypeConstraint},
	} {
		b.Run(c.name, func(b *testing.B) {
			db := storagetest.Open(b)
			ha := hatest.New(b, token)
			for i := range n {
				id := fmt.Sprintf("sensor.s%04d", i)
				ha.Set(id, "21.5")
				storagetest.Store(b, db, storage.NewRecord{Type: c.typ, Title: storagetest.Text(b, id),
					Anchors: storagetest.Texts(b, "entity:"+id)})
			}
			sw := sweeper(b, ha, 0)
			ha.Render()
			if _, err := sw.Run(ctx, db, storage.SystemClient); err != nil {
				b.Fatal(err)
			}
			state := "21.5"
			var cpu time.Duration
			b.ResetTimer()
			for b.Loop() {
				if c.flip {
					b.StopTimer()
					if state == "21.5" {
						state = "unavailable"
					} else {
						state = "21.5"
					}
					for i := range n {
						ha.Set(fmt.Sprintf("sensor.s%04d", i), state)
					}
					ha.Render()
					b.StartTimer()
				}
				c0 := storagetest.CPUTime()
				s, err := sw.Run(ctx, db, storage.SystemClient)
				cpu += storagetest.CPUTime() - c0
				if err != nil {
					b.Fatal(err)
				}
				if want := map[bool]int{false: 0, true: n}[c.flip]; s.Changed != want || s.Checked != n {
					b.Fatalf("sweep %+v, want %d changed of %d", *s, want, n)
				}
			}
			b.ReportMetric(float64(len(ha.Requests()))/float64(b.N+1), "requests/op")
			// CPU of the whole process (the test Supervisor included) per sweep.
			b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cpu-ms/op")
		})
	}
}

package storage_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/storagetest"
)

// states is a Home Assistant as a sweep's check sees it: entity id → what
// was found. An entity not in the map is gone.
func states(m map[string]storage.EntityCheck) func(string) storage.EntityCheck {
	return func(id string) storage.EntityCheck {
		if c, ok := m[id]; ok {
			return c
		}
		return storage.EntityCheck{State: storage.AnchorUnavailable, Detail: "not in Home Assistant"}
	}
}

var (
	on   = storage.EntityCheck{State: storage.AnchorAvailable}
	gone = storage.EntityCheck{State: storage.AnchorUnavailable, Detail: "state unavailable"}
)

func TestDB_Sweep(t *testing.T) {
	t.Parallel()
	t.Run("OK", func(t *testing.T) {
		db := storagetest.Open(t)
		now := fixedClock(db)
		door := anchored(t, db, "garage door", "entity:binary_sensor.garage_door", "path:ha/automations.yaml")
		two := anchored(t, db, "two sensors", "entity:sensor.a", "entity:sensor.b")
		kept := anchored(t, db, "lamp", "entity:light.lamp")
		retired := anchored(t, db, "retired", "entity:sensor.old")
		if _, err := db.Forget(ctx, retired.ID, 0, text(t, "gone"), "test"); err != nil {
			t.Fatal(err)
		}
		*now = now.Add(time.Hour)
		s, err := db.Sweep(ctx, storage.SweepRun{Client: storage.SystemClient, HomeAssistant: true,
			Check: states(map[string]storage.EntityCheck{"sensor.a": gone, "sensor.b": gone, "light.lamp": on})})
		if err != nil {
			t.Fatal(err)
		}
		want := storage.Sweep{At: *now, RequestedBy: storage.SystemClient, HomeAssistant: true,
			Checked: 4, Changed: 4, Available: 1, Unavailable: 3}
		if *s != want {
			t.Errorf("sweep: got %+v, want %+v", *s, want)
		}
		if got := anchorOf(t, db, door.ID, "entity:binary_sensor.garage_door"); got != (storage.Anchor{
			Anchor: "entity:binary_sensor.garage_door", State: storage.AnchorUnavailable, CheckedAt: *now,
			CheckedBy: storage.SweepChecker, Detail: "not in Home Assistant"}) {
			t.Errorf("gone entity: %+v", got)
		}
		if got := anchorOf(t, db, door.ID, "path:ha/automations.yaml"); got.State != storage.AnchorUnknown {
			t.Errorf("the sweep touched a path anchor: %+v", got)
		}
		// Each record advances once, however many of its anchors changed.
		for _, c := range []struct {
			r   *storage.Record
			rev int
		}{{door, 2}, {two, 2}, {kept, 2}} {
			if got := get(t, db, c.r.ID).Revision; got != c.rev {
				t.Errorf("%s: revision %d, want %d", c.r.Title, got, c.rev)
			}
		}
		if got := get(t, db, retired.ID); got.Revision != retired.Revision+1 || got.Anchors[0].State != storage.AnchorUnknown {
			t.Errorf("a deleted record's anchor was swept: %+v", got)
		}
		audit := auditOf(t, db, storage.ActionAnchor)
		if len(audit) != 3 {
			t.Fatalf("audit: %d rows, want one per changed record", len(audit))
		}
		for _, e := range audit {
			if e.RecordID == two.ID && e.Detail.String() != "sweep: entity:sensor.a unknown→unavailable (state unavailable); entity:sensor.b unknown→unavailable (state unavailable)" {
				t.Errorf("audit detail: %s", e.Detail.String())
			}
			if e.Client != storage.SystemClient {
				t.Errorf("audit client %q, want %q", e.Client, storage.SystemClient)
			}
		}
		last, err := db.LastSweep(ctx)
		if err != nil || *last != want {
			t.Errorf("LastSweep: got %+v, %v; want %+v", last, err, want)
		}

		// The same states again: nothing but the sweep's row is written.
		before := snapshot(t, db)
		*now = now.Add(time.Hour)
		s, err = db.Sweep(ctx, storage.SweepRun{Client: "claude-code", HomeAssistant: true,
			Check: states(map[string]storage.EntityCheck{"sensor.a": {State: storage.AnchorUnavailable, Detail: "state unknown"}, "sensor.b": gone, "light.lamp": on})})
		if err != nil {
			t.Fatal(err)
		}
		if snapshot(t, db) != before {
			t.Errorf("a sweep that found nothing new changed records, anchors or the audit")
		}
		if s.Checked != 4 || s.Changed != 0 || s.Unavailable != 3 || s.RequestedBy != "claude-code" {
			t.Errorf("second sweep: %+v", *s)
		}

		// The entity comes back.
		s, err = db.Sweep(ctx, storage.SweepRun{Client: storage.SystemClient, HomeAssistant: true,
			Check: states(map[string]storage.EntityCheck{"binary_sensor.garage_door": on, "sensor.a": gone, "sensor.b": gone, "light.lamp": on})})
		if err != nil || s.Changed != 1 || s.Available != 2 {
			t.Fatalf("third sweep: %+v, %v", s, err)
		}
		if got := get(t, db, door.ID); got.Revision != 3 || got.Unavailable() != nil {
			t.Errorf("door after it came back: revision %d flag %+v", got.Revision, got.Unavailable())
		}
	})

	t.Run("Unreachable", func(t *testing.T) {
		db := storagetest.Open(t)
		now := fixedClock(db)
		r := anchored(t, db, "lamp", "entity:light.lamp")
		if _, err := db.Sweep(ctx, storage.SweepRun{Client: storage.SystemClient, HomeAssistant: true, Check: states(nil)}); err != nil {
			t.Fatal(err)
		}
		before := snapshot(t, db)
		*now = now.Add(time.Hour)
		s, err := db.Sweep(ctx, storage.SweepRun{Client: storage.SystemClient, HomeAssistant: true, Unreachable: true,
			Detail: text(t, "Home Assistant answered 502")})
		if err != nil {
			t.Fatal(err)
		}
		if snapshot(t, db) != before {
			t.Errorf("an unreachable Home Assistant changed records, anchors or the audit")
		}
		want := storage.Sweep{At: *now, RequestedBy: storage.SystemClient, HomeAssistant: true, Unreachable: true,
			Detail: "Home Assistant answered 502", Unavailable: 1}
		if *s != want {
			t.Errorf("got %+v, want %+v", *s, want)
		}
		if got := get(t, db, r.ID); got.Revision != 2 {
			t.Errorf("revision %d, want 2 (the first sweep only)", got.Revision)
		}
		if last, _ := db.LastSweep(ctx); *last != want {
			t.Errorf("LastSweep: %+v", last)
		}
	})

	t.Run("NoHomeAssistant", func(t *testing.T) {
		db := storagetest.Open(t)
		fixedClock(db)
		anchored(t, db, "lamp", "entity:light.lamp", "host:nas")
		before := snapshot(t, db)
		s, err := db.Sweep(ctx, storage.SweepRun{Client: storage.SystemClient, Detail: text(t, "no SUPERVISOR_TOKEN")})
		if err != nil {
			t.Fatal(err)
		}
		if snapshot(t, db) != before {
			t.Errorf("a sweep without Home Assistant changed something")
		}
		if s.HomeAssistant || s.Checked != 0 || s.Unknown != 1 || s.Available+s.Unavailable != 0 {
			t.Errorf("got %+v, want one unknown entity anchor and nothing checked", *s)
		}
	})

	t.Run("KeepsTheLatest", func(t *testing.T) {
		db := storagetest.Open(t)
		now := fixedClock(db)
		for range 105 {
			*now = now.Add(time.Minute)
			if _, err := db.Sweep(ctx, storage.SweepRun{Client: storage.SystemClient}); err != nil {
				t.Fatal(err)
			}
		}
		var n int
		if err := db.QueryRaw(ctx, false, `SELECT COUNT(*) FROM anchor_sweeps`, &n); err != nil || n != 100 {
			t.Errorf("kept %d sweeps (%v), want 100", n, err)
		}
		if last, _ := db.LastSweep(ctx); !last.At.Equal(*now) {
			t.Errorf("last sweep at %v, want %v", last.At, *now)
		}
	})

	t.Run("ErrCheck", func(t *testing.T) {
		db := storagetest.Open(t)
		anchored(t, db, "lamp", "entity:light.lamp")
		unchanged(t, db, storage.Invalid, "check", func() error {
			_, err := db.Sweep(ctx, storage.SweepRun{Client: storage.SystemClient, HomeAssistant: true,
				Check: func(string) storage.EntityCheck { return storage.EntityCheck{State: "on"} }})
			return err
		})
		unchanged(t, db, storage.Invalid, "check", func() error {
			_, err := db.Sweep(ctx, storage.SweepRun{Client: storage.SystemClient, Unreachable: true, HomeAssistant: true, Check: states(nil)})
			return err
		})
		unchanged(t, db, storage.Invalid, "client", func() error {
			_, err := db.Sweep(ctx, storage.SweepRun{})
			return err
		})
	})
}

func TestDB_AnchorStatus(t *testing.T) {
	t.Parallel()
	db := storagetest.Open(t)
	now := fixedClock(db)
	st, err := db.AnchorStatus(ctx, 10)
	if err != nil || st.LastSweep != nil || !st.NextSweep.IsZero() || st.FlaggedTotal != 0 || len(st.Flagged) != 0 {
		t.Fatalf("empty store: %+v, %v", st, err)
	}
	var recs []*storage.Record
	for i := range 5 {
		recs = append(recs, anchored(t, db, fmt.Sprintf("r%d", i), "host:nas", fmt.Sprintf("path:f%d.go", i)))
	}
	// r0..r3 flagged at successive times; r1 on both anchors; r3 then
	// forgotten; r4 available.
	for i, r := range recs[:4] {
		*now = now.Add(time.Minute)
		reports := []storage.AnchorReport{{ID: r.ID, Anchor: fmt.Sprintf("path:f%d.go", i), State: storage.AnchorUnavailable}}
		if i == 1 {
			reports = append(reports, storage.AnchorReport{ID: r.ID, Anchor: "host:nas", State: storage.AnchorUnavailable, Detail: text(t, "nas is off")})
		}
		if _, _, err := db.ReportAnchors(ctx, "codex", reports); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Forget(ctx, recs[3].ID, 0, text(t, "gone"), "test"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := db.ReportAnchors(ctx, "codex", []storage.AnchorReport{{ID: recs[4].ID, Anchor: "host:nas", State: storage.AnchorAvailable}}); err != nil {
		t.Fatal(err)
	}
	next := now.Add(6 * time.Hour)
	if _, _, err := db.EnqueueJob(ctx, storage.NewJob{Kind: storage.KindAnchorSweep, RunAfter: next}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Sweep(ctx, storage.SweepRun{Client: storage.SystemClient}); err != nil {
		t.Fatal(err)
	}

	st, err = db.AnchorStatus(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	if st.LastSweep == nil || !st.LastSweep.At.Equal(*now) || !st.NextSweep.Equal(next) {
		t.Errorf("sweeps: last %+v, next %v; want last at %v, next %v", st.LastSweep, st.NextSweep, *now, next)
	}
	if st.FlaggedTotal != 3 {
		t.Errorf("flagged total %d, want 3", st.FlaggedTotal)
	}
	at := func(i int) time.Time { return time.Date(2026, 11, 30, 12, i, 0, 0, time.UTC) }
	want := []storage.FlaggedRecord{
		{ID: recs[2].ID, Namespace: recs[2].Namespace, Type: recs[2].Type, Title: "r2", Status: storage.StatusActive,
			Flag: storage.AnchorFlag{Anchor: "path:f2.go", Since: at(3), Count: 1}, CheckedBy: "codex"},
		{ID: recs[1].ID, Namespace: recs[1].Namespace, Type: recs[1].Type, Title: "r1", Status: storage.StatusActive,
			Flag: storage.AnchorFlag{Anchor: "host:nas", Since: at(2), Count: 2}, CheckedBy: "codex", Detail: "nas is off"},
	}
	if len(st.Flagged) != len(want) {
		t.Fatalf("flagged: got %+v, want %+v", st.Flagged, want)
	}
	for i := range want {
		if st.Flagged[i] != want[i] {
			t.Errorf("flagged %d: got %+v, want %+v", i, st.Flagged[i], want[i])
		}
	}
}

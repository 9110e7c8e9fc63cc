package anchors

import (
	"errors"
	"testing"
	"time"

	"github.com/hearth-memory/hearth/storage/internal/errs"
	"github.com/hearth-memory/hearth/storage/screen"
)

// TestGather checks the rules of a call's reports before anything is
// written: the last report of an anchor decides its state; a report that
// leaves the state as it was keeps the earlier check; each record is
// looked up once; an anchor the record lacks is NotFound naming the
// report's field. The writes are tested through storage's DB
// (storage/anchorreport_test.go), which both engines run.
func TestGather(t *testing.T) {
	t.Parallel()
	then := time.UnixMilli(1_000).UTC()
	now := time.UnixMilli(2_000).UTC()
	owner := &Owner{Namespace: "ns", Anchors: []Anchor{
		{Anchor: "path:a", State: Unknown},
		{Anchor: "host:b", State: Available, CheckedAt: then, CheckedBy: "old"},
	}}
	lookups := 0
	find := func(r *Report) (*Owner, error) { lookups++; return owner, nil }
	reports := []Report{
		{ID: "r1", Anchor: "path:a", State: Unavailable, Detail: screen.Redact("gone")},
		{ID: "r1", Anchor: "host:b", State: Available},
		{ID: "r1", Anchor: "path:a", State: Available},
	}
	changes, err := Gather(reports, now, "me", find)
	if err != nil {
		t.Fatal(err)
	}
	if lookups != 2 {
		t.Errorf("looked up %d times, want once per anchor (2)", lookups)
	}
	a := changes[Key{"r1", "path:a"}]
	if a.Now.State != Available || a.Now.CheckedBy != "me" || !a.Now.CheckedAt.Equal(now) || a.Was.State != Unknown || a.Position != 0 {
		t.Errorf("path:a = %+v, want unknown → available by me at now", a)
	}
	b := changes[Key{"r1", "host:b"}]
	if b.Now != b.Was || b.Position != 1 || b.Namespace != "ns" {
		t.Errorf("host:b = %+v, want untouched at position 1", b)
	}
	got := Results(reports, changes, map[string]int{"r1": 4})
	if !got[0].Changed || got[0].State != Available || got[1].Changed || got[2].Revision != 4 {
		t.Errorf("results = %+v", got)
	}

	_, err = Gather([]Report{{ID: "r1", Anchor: "url:http://x/", State: Available, Field: "reports[0]."}}, now, "me", find)
	var e *errs.Error
	if !errors.As(err, &e) || e.Code != errs.NotFound || e.Field != "reports[0].anchor" {
		t.Errorf("missing anchor: %v, want NotFound on reports[0].anchor", err)
	}
}

// TestKeepStates checks that a new list of anchors keeps the checks of
// the anchors it keeps, in its own order, and starts new ones unknown.
func TestKeepStates(t *testing.T) {
	t.Parallel()
	old := []Anchor{{Anchor: "path:a", State: Unavailable, CheckedBy: "c"}, {Anchor: "host:b", State: Available}}
	got := KeepStates(old, []string{"host:b", "path:c", "path:a"})
	want := []Anchor{old[1], {Anchor: "path:c", State: Unknown}, old[0]}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("anchor %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

// TestFlagOf checks a record's flag: its first unavailable anchor, since
// that anchor's check, counting every unavailable one; none without.
func TestFlagOf(t *testing.T) {
	t.Parallel()
	at := time.UnixMilli(5_000).UTC()
	f := FlagOf([]Anchor{{Anchor: "path:a", State: Available}, {Anchor: "path:b", State: Unavailable, CheckedAt: at},
		{Anchor: "path:c", State: Unavailable}})
	if f == nil || f.Anchor != "path:b" || !f.Since.Equal(at) || f.Count != 2 {
		t.Errorf("flag = %+v, want path:b since %v, 2 anchors", f, at)
	}
	if f := FlagOf([]Anchor{{Anchor: "path:a", State: Unknown}}); f != nil {
		t.Errorf("flag without unavailable anchors = %+v, want nil", f)
	}
}

// TestReportValidate checks that a client may not report an entity
// anchor, which only the sweep checks, nor a state but the two it finds.
func TestReportValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		r     Report
		field string
	}{
		{Report{ID: "r", Anchor: "entity:light.x", State: Available, Field: "p."}, "p.anchor"},
		{Report{ID: "r", Anchor: "path:a", State: Unknown}, "state"},
		{Report{Anchor: "path:a", State: Available}, "id"},
		{Report{ID: "r", Anchor: "path:/abs", State: Available}, "anchor"},
	} {
		var e *errs.Error
		if err := tc.r.Validate(); !errors.As(err, &e) || e.Code != errs.Invalid || e.Field != tc.field {
			t.Errorf("%+v: %v, want Invalid on %s", tc.r, err, tc.field)
		}
	}
	if err := (&Report{ID: "r", Anchor: "path:a", State: Unavailable}).Validate(); err != nil {
		t.Errorf("a good report: %v", err)
	}
}

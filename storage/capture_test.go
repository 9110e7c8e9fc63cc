package storage_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/storagetest"
)

const captureNS = "github/acme/api"

// events builds captured events of one session, one second apart from at.
type events struct {
	tb  testing.TB
	sid string
	at  time.Time
	n   int
	out []storage.CaptureEvent
}

func (e *events) add(ev storage.CaptureEvent) *events {
	e.n++
	ev.ID = fmt.Sprintf("ev-%s-%04d", e.sid, e.n)
	ev.SessionID = text(e.tb, e.sid)
	ev.Harness, ev.Namespace = "claude-code", captureNS
	ev.At = e.at.Add(time.Duration(e.n) * time.Second)
	e.out = append(e.out, ev)
	return e
}

func (e *events) edit(path string, created bool) *events {
	return e.add(storage.CaptureEvent{Kind: storage.CaptureEdit, Path: text(e.tb, path), Created: created})
}

func (e *events) run(cmd string, ok bool, tests ...string) *events {
	ev := storage.CaptureEvent{Kind: storage.CaptureCommand, Command: text(e.tb, cmd), OK: ok, ExitCode: -1}
	if !ok {
		ev.ExitCode = 1
		ev.Tests = storagetest.Texts(e.tb, tests...)
		ev.Errors = storagetest.Texts(e.tb, "--- FAIL: "+strings.Join(tests, ","))
	}
	return e.add(ev)
}

// observations lists a namespace's live capture records by title.
func observations(tb testing.TB, db *storage.DB) map[string]*storage.Record {
	tb.Helper()
	page, err := db.Timeline(context.Background(), storage.TimelineQuery{Namespaces: []string{captureNS}, Limit: 200})
	if err != nil {
		tb.Fatal(err)
	}
	out := map[string]*storage.Record{}
	for _, r := range page {
		if r.Source == storage.SourceCapture && r.Live() {
			out[r.Title] = r
		}
	}
	return out
}

// TestDB_Capture holds the coalescing rules of docs/capture.md: one
// observation per file and per command of a session, a replayed event
// changing nothing, and "where we left off" naming the last session.
func TestDB_Capture(t *testing.T) {
	t.Parallel()
	db := storagetest.Open(t)
	e := &events{tb: t, sid: "s1", at: t0}
	for range 20 {
		e.edit("cmd/a.go", false)
	}
	e.edit("docs/new.md", true).edit("docs/new.md", false)
	e.run("go test ./...", false, "TestX", "TestY").run("go test ./...", true)
	e.run("make lint", true).run("make lint", false, "lint").run("make lint", true)
	e.run("npm test", true).run("npm test", false, "adds numbers")
	e.run("make build", true)
	// Sent in two batches, as the hooks would.
	var total storage.CaptureResult
	for _, b := range [][]storage.CaptureEvent{e.out[:10], e.out[10:]} {
		res, err := db.Capture(ctx, "claude-code", b)
		if err != nil {
			t.Fatal(err)
		}
		total.Accepted += res.Accepted
		total.Replayed += res.Replayed
	}
	if total.Accepted != len(e.out) || total.Replayed != 0 {
		t.Fatalf("accepted %d replayed %d, want %d and 0", total.Accepted, total.Replayed, len(e.out))
	}
	obs := observations(t, db)
	want := map[string]string{
		"Edited cmd/a.go":                          "20 edits",
		"Created docs/new.md":                      "2 edits",
		"`go test ./...` failed, then passed":      "ran 2 times (1 failed); the last run passed",
		"`make lint` is flaky: 1 of 3 runs failed": "ran 3 times (1 failed)",
		"`npm test` fails: adds numbers":           "the last run failed (exit code 1)",
		"`make build` passed":                      "ran 1 time (0 failed)",
	}
	if len(obs) != len(want) {
		t.Errorf("%d observations, want %d: %v", len(obs), len(want), slices.Sorted(func(yield func(string) bool) {
			for k := range obs {
				if !yield(k) {
					return
				}
			}
		}))
	}
	for title, part := range want {
		r := obs[title]
		switch {
		case r == nil:
			t.Errorf("no observation %q", title)
		case !strings.Contains(r.Content, part):
			t.Errorf("%q content = %q, want it to say %q", title, r.Content, part)
		case r.Type != storage.TypeNote || r.Status != storage.StatusActive || r.Writer != "claude-code" || !slices.Equal(r.Topics, []string{"capture"}):
			t.Errorf("%q = %s %s by %s topics %v", title, r.Type, r.Status, r.Writer, r.Topics)
		}
	}

	// Replaying every event changes nothing.
	before := snapshot(t, db)
	res, err := db.Capture(ctx, "claude-code", e.out)
	if err != nil {
		t.Fatal(err)
	}
	if res.Accepted != 0 || res.Replayed != len(e.out) || res.Observations != 0 {
		t.Errorf("replay = %+v, want every event replayed and nothing written", res)
	}
	if after := snapshot(t, db); after != before {
		t.Error("a replay changed the database")
	}

	// Where we left off, asked by another session.
	lo, err := db.LeftOff(ctx, captureNS, "s2")
	if err != nil || lo == nil {
		t.Fatalf("LeftOff = %v, %v", lo, err)
	}
	if lo.SessionID != "s1" || lo.Harness != "claude-code" || !slices.Equal(lo.Touched, []string{"cmd/a.go", "docs/new.md"}) ||
		len(lo.Failing) != 1 || lo.Failing[0].Command != "npm test" || !slices.Equal(lo.Failing[0].Tests, []string{"adds numbers"}) {
		t.Errorf("LeftOff = %+v", lo)
	}
	if !lo.LastAt.Equal(e.out[len(e.out)-1].At.Truncate(time.Millisecond)) {
		t.Errorf("last at %v, want %v", lo.LastAt, e.out[len(e.out)-1].At)
	}
	// The session itself has nothing to be told, nor another namespace.
	if lo, err := db.LeftOff(ctx, captureNS, "s1"); err != nil || lo != nil {
		t.Errorf("LeftOff for s1 itself = %+v, %v", lo, err)
	}
	// A later session is the last one.
	e2 := (&events{tb: t, sid: "s2", at: t0.Add(time.Hour)}).edit("z.go", false)
	if _, err := db.Capture(ctx, "codex", e2.out); err != nil {
		t.Fatal(err)
	}
	if lo, err := db.LeftOff(ctx, captureNS, "s3"); err != nil || lo == nil || lo.SessionID != "s2" {
		t.Errorf("LeftOff after s2 = %+v, %v", lo, err)
	}
}

// TestDB_Capture_Compact coalesces a session's compactions into one
// observation that keeps the last summary.
func TestDB_Capture_Compact(t *testing.T) {
	t.Parallel()
	db := storagetest.Open(t)
	e := &events{tb: t, sid: "s1", at: t0}
	e.add(storage.CaptureEvent{Kind: storage.CaptureCompact, Summary: text(t, "Working on the retry policy.")})
	e.add(storage.CaptureEvent{Kind: storage.CaptureCompact, Summary: text(t, "Retry policy done; now the billing tests.")})
	if _, err := db.Capture(ctx, "claude-code", e.out); err != nil {
		t.Fatal(err)
	}
	obs := observations(t, db)
	r := obs["Context compacted in session s1 (claude-code)"]
	if len(obs) != 1 || r == nil || !strings.Contains(r.Content, "compacted 2 times") || !strings.Contains(r.Content, "now the billing tests") {
		t.Errorf("observations = %v", obs)
	}
}

// TestDB_Capture_Late counts an event that arrives after a later one
// without letting it decide the last run.
func TestDB_Capture_Late(t *testing.T) {
	t.Parallel()
	db := storagetest.Open(t)
	e := (&events{tb: t, sid: "s1", at: t0}).run("go test", false, "TestA").run("go test", true)
	if _, err := db.Capture(ctx, "claude-code", []storage.CaptureEvent{e.out[1]}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Capture(ctx, "claude-code", []storage.CaptureEvent{e.out[0]}); err != nil {
		t.Fatal(err)
	}
	obs := observations(t, db)
	// By time the failure came first: the command failed, then passed.
	if r := obs["`go test` failed, then passed"]; r == nil || !strings.Contains(r.Content, "ran 2 times (1 failed); the last run passed") {
		t.Errorf("observations = %v", obs)
	}
}

// TestDB_Capture_Err refuses a bad event naming it, and writes nothing.
func TestDB_Capture_Err(t *testing.T) {
	t.Parallel()
	db := storagetest.Open(t)
	good := (&events{tb: t, sid: "s1", at: t0}).edit("a.go", false).out[0]
	for _, c := range []struct {
		field string
		mod   func(*storage.CaptureEvent)
	}{
		{"events[1].id", func(ev *storage.CaptureEvent) { ev.ID = "bad id" }},
		{"events[1].kind", func(ev *storage.CaptureEvent) { ev.Kind = "read" }},
		{"events[1].path", func(ev *storage.CaptureEvent) { ev.Path = text(t, "") }},
		{"events[1].command", func(ev *storage.CaptureEvent) { ev.Kind = storage.CaptureCommand }},
	} {
		bad := good
		bad.ID = "ev-other-0001"
		c.mod(&bad)
		unchanged(t, db, storage.Invalid, c.field, func() error {
			_, err := db.Capture(ctx, "claude-code", []storage.CaptureEvent{good, bad})
			return err
		})
	}
}

// TestDB_Maintain_Capture forgets observations older than the retention
// that no one fetched, cited or promoted, and purges capture's rows.
func TestDB_Maintain_Capture(t *testing.T) {
	t.Parallel()
	db := storagetest.Open(t)
	clk := newClock(db, t0)
	e := (&events{tb: t, sid: "s1", at: t0}).edit("plain.go", false).edit("fetched.go", false).edit("promoted.go", false)
	if _, err := db.Capture(ctx, "claude-code", e.out); err != nil {
		t.Fatal(err)
	}
	obs := observations(t, db)
	plain, fetched, promoted := obs["Edited plain.go"], obs["Edited fetched.go"], obs["Edited promoted.go"]
	if err := db.CountFetched(ctx, []string{fetched.ID}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Update(ctx, promoted.ID, promoted.Revision, storage.Changes{Type: ptr(storage.TypeDecision)}, "alice"); err != nil {
		t.Fatal(err)
	}
	m := storage.Maintenance{Retention: 30 * days, CaptureRetention: 14 * days}
	clk.Add(13 * days)
	if rep, err := db.Maintain(ctx, m); err != nil || rep.ObservationsExpired != 0 {
		t.Fatalf("day 13: %+v, %v", rep, err)
	}
	clk.Add(2 * days)
	rep, err := db.Maintain(ctx, m)
	if err != nil || rep.ObservationsExpired != 1 {
		t.Fatalf("day 15: %+v, %v", rep, err)
	}
	if r := get(t, db, plain.ID); r.Status != storage.StatusDeleted {
		t.Errorf("plain = %s, want deleted", r.Status)
	}
	for _, id := range []string{fetched.ID, promoted.ID} {
		if r := get(t, db, id); !r.Live() {
			t.Errorf("%s = %s, want kept", r.Title, r.Status)
		}
	}
	// The events are purged: the same id is new again, and the fact starts over.
	if res, err := db.Capture(ctx, "claude-code", e.out[:1]); err != nil || res.Accepted != 1 {
		t.Errorf("after the purge: %+v, %v", res, err)
	}
	// 0 keeps them.
	clk.Add(30 * days)
	if rep, err := db.Maintain(ctx, storage.Maintenance{Retention: 30 * days}); err != nil || rep.ObservationsExpired != 0 {
		t.Errorf("capture retention 0: %+v, %v", rep, err)
	}
}

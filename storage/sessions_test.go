package storage_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/storagetest"
)

// clock is a settable clock for db.Now, safe for concurrent reads.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

// newClock sets db's clock to t0 and returns it.
func newClock(db *storage.DB, t0 time.Time) *clock {
	c := &clock{t: t0}
	db.Now = c.Now
	return c
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

var t0 = time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)

// sessionClose is a close by claude-code of session s1 in global with a
// summary kept for extraction and a job for it.
func sessionClose(tb testing.TB, opID, summary, notes string) storage.SessionClose {
	tb.Helper()
	payload := `{"summary":` + quote(summary) + `,"notes":` + quote(notes) + `}`
	return storage.SessionClose{
		OpID: opID, Client: "claude-code", Namespace: "global", SessionID: text(tb, "s1"),
		Digest:      storage.CloseDigest("claude-code", opID, "s1", "global", summary, notes),
		SummaryKept: summary != "",
		Extraction:  &storage.NewJob{Kind: storage.KindExtraction, Payload: text(tb, payload)},
		Retention:   30 * 24 * time.Hour,
	}
}

func quote(s string) string { return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"` }

func countRows(tb testing.TB, db *storage.DB, query string) int {
	tb.Helper()
	var n int
	if err := db.QueryRaw(ctx, false, query, &n); err != nil {
		tb.Fatalf("%s: %v", query, err)
	}
	return n
}

func TestDB_CloseSession(t *testing.T) {
	t.Parallel()
	t.Run("OK", func(t *testing.T) {
		db := storagetest.Open(t)
		newClock(db, t0)
		r, replayed, err := db.CloseSession(ctx, sessionClose(t, "op-00001", "Did X.", "Some notes."))
		if err != nil || replayed {
			t.Fatalf("CloseSession: %v replayed=%v", err, replayed)
		}
		if r.OpID != "op-00001" || r.SessionID != "s1" || r.Namespace != "global" || !r.ClosedAt.Equal(t0) ||
			!r.SummaryKept || r.NotesRefused || r.SummaryID != "" || r.JobID == "" {
			t.Errorf("receipt = %+v", r)
		}
		job, err := db.Job(ctx, r.JobID)
		if err != nil {
			t.Fatal(err)
		}
		if job.Kind != storage.KindExtraction || job.State != storage.JobQueued || !strings.Contains(job.Payload, "Some notes.") {
			t.Errorf("job = %+v", job)
		}
		if got, err := db.Receipt(ctx, "op-00001"); err != nil || *got != *r {
			t.Errorf("Receipt = %+v, %v; want %+v", got, err, r)
		}
		log, _ := db.AuditLog(ctx, 1)
		if len(log) != 1 || log[0].Action != storage.ActionSessionClose || !strings.Contains(log[0].Detail.String(), "op op-00001") {
			t.Errorf("audit = %+v", log)
		}
	})

	t.Run("Replay", func(t *testing.T) {
		db := storagetest.Open(t)
		clk := newClock(db, t0)
		first, _, err := db.CloseSession(ctx, sessionClose(t, "op-00001", "Did X.", "Some notes."))
		if err != nil {
			t.Fatal(err)
		}
		before := snapshot(t, db)
		jobs := countRows(t, db, `SELECT COUNT(*) FROM jobs`)
		clk.Add(time.Hour)
		again, replayed, err := db.CloseSession(ctx, sessionClose(t, "op-00001", "Did X.", "Some notes."))
		if err != nil || !replayed {
			t.Fatalf("replay: %v replayed=%v", err, replayed)
		}
		if *again != *first {
			t.Errorf("replay = %+v, want %+v", again, first)
		}
		if snapshot(t, db) != before || countRows(t, db, `SELECT COUNT(*) FROM jobs`) != jobs {
			t.Errorf("a replay wrote something")
		}
	})

	t.Run("ErrOtherClient", func(t *testing.T) {
		db := storagetest.Open(t)
		if _, _, err := db.CloseSession(ctx, sessionClose(t, "op-00001", "Did X.", "")); err != nil {
			t.Fatal(err)
		}
		c := sessionClose(t, "op-00001", "Did X.", "")
		c.Client = "codex"
		c.Digest = storage.CloseDigest("codex", "op-00001", "s1", "global", "Did X.", "")
		e := unchanged(t, db, storage.Exists, "op_id", func() error { _, _, err := db.CloseSession(ctx, c); return err })
		if !strings.Contains(e.Message, "another client") {
			t.Errorf("message %q", e.Message)
		}
	})

	t.Run("ErrOtherInputs", func(t *testing.T) {
		db := storagetest.Open(t)
		if _, _, err := db.CloseSession(ctx, sessionClose(t, "op-00001", "Did X.", "")); err != nil {
			t.Fatal(err)
		}
		e := unchanged(t, db, storage.Exists, "op_id", func() error {
			_, _, err := db.CloseSession(ctx, sessionClose(t, "op-00001", "Did Y.", ""))
			return err
		})
		if !strings.Contains(e.Message, "other inputs") {
			t.Errorf("message %q", e.Message)
		}
	})

	t.Run("ErrExpired", func(t *testing.T) {
		db := storagetest.Open(t)
		clk := newClock(db, t0)
		if _, _, err := db.CloseSession(ctx, sessionClose(t, "op-00001", "Did X.", "")); err != nil {
			t.Fatal(err)
		}
		clk.Add(30*24*time.Hour - time.Millisecond)
		if _, replayed, err := db.CloseSession(ctx, sessionClose(t, "op-00001", "Did X.", "")); err != nil || !replayed {
			t.Fatalf("replay just inside retention: %v replayed=%v", err, replayed)
		}
		clk.Add(time.Millisecond)
		// Past retention, before maintenance made it a tombstone.
		unchanged(t, db, storage.Expired, "op_id", func() error {
			_, _, err := db.CloseSession(ctx, sessionClose(t, "op-00001", "Did X.", ""))
			return err
		})
		// After maintenance: a tombstone, whatever the retention asked now.
		if _, err := db.Maintain(ctx, storage.Maintenance{Retention: 30 * 24 * time.Hour}); err != nil {
			t.Fatal(err)
		}
		r, err := db.Receipt(ctx, "op-00001")
		if err != nil || !r.Tombstone || r.SessionID != "" || r.JobID != "" || r.Client != "claude-code" {
			t.Fatalf("tombstone = %+v, %v", r, err)
		}
		c := sessionClose(t, "op-00001", "Did X.", "")
		c.Retention = 0
		wantErr(t, func() error { _, _, err := db.CloseSession(ctx, c); return err }(), storage.Expired, "op_id")
		// Another close may still not take the op_id.
		wantErr(t, func() error {
			_, _, err := db.CloseSession(ctx, sessionClose(t, "op-00001", "Did Z.", ""))
			return err
		}(), storage.Exists, "op_id")
	})

	t.Run("SummaryCandidate", func(t *testing.T) {
		db := storagetest.Open(t)
		c := sessionClose(t, "op-00001", "Chose SQLite for the queue.", "")
		c.Extraction = nil
		c.Summary = &storage.NewRecord{
			Type: storage.TypeSummary, Title: text(t, "Chose SQLite for the queue."), Content: text(t, "Chose SQLite for the queue."),
			Confidence: 0.8, Source: storage.SourceSession, Status: storage.StatusCandidate,
			Namespace: "elsewhere", Writer: "someone-else", // overridden by the close
		}
		r, _, err := db.CloseSession(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		if r.SummaryID == "" || r.JobID != "" {
			t.Fatalf("receipt = %+v", r)
		}
		s := get(t, db, r.SummaryID)
		if s.Status != storage.StatusCandidate || s.Type != storage.TypeSummary || s.Source != storage.SourceSession ||
			s.Namespace != "global" || s.Writer != "claude-code" {
			t.Errorf("summary record = %+v", s)
		}
	})

	t.Run("NotesRefused", func(t *testing.T) {
		db := storagetest.Open(t)
		c := sessionClose(t, "op-00001", "Did X.", "")
		c.NotesRefusedPattern = "no-store-marker"
		r, _, err := db.CloseSession(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		if !r.NotesRefused || r.NotesRefusedPattern != "no-store-marker" || !r.SummaryKept {
			t.Errorf("receipt = %+v", r)
		}
		log, _ := db.AuditLog(ctx, 2)
		if len(log) != 2 || log[1].Action != "refuse.screen" || log[1].Detail.String() != "field notes pattern no-store-marker" {
			t.Errorf("audit = %+v", log)
		}
	})

	t.Run("ErrInvalid", func(t *testing.T) {
		db := storagetest.Open(t)
		for _, tt := range []struct {
			field string
			edit  func(*storage.SessionClose)
		}{
			{"op_id", func(c *storage.SessionClose) { c.OpID = "short" }},
			{"client", func(c *storage.SessionClose) { c.Client = "" }},
			{"digest", func(c *storage.SessionClose) { c.Digest = "abc" }},
			{"namespace", func(c *storage.SessionClose) { c.Namespace = "" }},
			{"kind", func(c *storage.SessionClose) { c.Extraction.Kind = "Bad Kind" }},
			{"payload", func(c *storage.SessionClose) { c.Extraction.Payload = text(t, "[1]") }},
			{"title", func(c *storage.SessionClose) {
				c.Summary = &storage.NewRecord{Type: storage.TypeSummary, Content: text(t, "x"), Confidence: 0.8,
					Source: storage.SourceSession, Status: storage.StatusCandidate}
			}},
		} {
			t.Run(tt.field, func(t *testing.T) {
				c := sessionClose(t, "op-00001", "Did X.", "")
				tt.edit(&c)
				unchanged(t, db, storage.Invalid, tt.field, func() error { _, _, err := db.CloseSession(ctx, c); return err })
			})
		}
		if n := countRows(t, db, `SELECT COUNT(*) FROM receipts`) + countRows(t, db, `SELECT COUNT(*) FROM jobs`); n != 0 {
			t.Errorf("refusals left %d receipts and jobs", n)
		}
	})
}

// BenchmarkDB_CloseSession measures a new close (receipt, extraction job and
// audit in one transaction) and a replay.
func BenchmarkDB_CloseSession(b *testing.B) {
	db := storagetest.Open(b)
	b.Run("New", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			if _, _, err := db.CloseSession(ctx, sessionClose(b, fmt.Sprintf("bench-%08d", i), "Did X.", "Some notes.")); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Replay", func(b *testing.B) {
		c := sessionClose(b, "bench-replay", "Did X.", "Some notes.")
		if _, _, err := db.CloseSession(ctx, c); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if _, replayed, err := db.CloseSession(ctx, c); err != nil || !replayed {
				b.Fatal(err, replayed)
			}
		}
	})
}

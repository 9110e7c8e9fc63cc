package storage_test

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/screen"
	"github.com/hearth-memory/hearth/storage/storagetest"
)

func TestDB_Store(t *testing.T) {
	t.Parallel()
	t.Run("OK", func(t *testing.T) {
		db := storagetest.Open(t)
		nr := rec(t, "github/acme/api", "Use PostgreSQL", "We chose PostgreSQL 16 for billing.")
		nr.Confidence = 0.7
		nr.Topics = storagetest.Texts(t, "db", "billing", "db")
		nr.Anchors = storagetest.Texts(t, "path:db/schema.sql", "host:db1", "path:db/schema.sql")
		got, err := db.Store(ctx, nr)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.ID) != 26 {
			t.Errorf("id: got %q, want a 26-character ULID", got.ID)
		}
		if got.Namespace != "github/acme/api" || got.Type != storage.TypeDecision ||
			got.Title != "Use PostgreSQL" || got.Content != "We chose PostgreSQL 16 for billing." ||
			got.Status != storage.StatusActive || got.Writer != "claude-code" || got.Source != storage.SourceStore {
			t.Errorf("got %+v, want the fields stored", got)
		}
		if got.Revision != 1 || got.Confidence != 0.7 || got.EffectiveConfidence != 0.7 ||
			got.ProofCount != 0 || got.RefutationCount != 0 {
			t.Errorf("revision, confidence, effective, proofs, refutations: got %d, %v, %v, %d, %d, want 1, 0.7, 0.7, 0, 0",
				got.Revision, got.Confidence, got.EffectiveConfidence, got.ProofCount, got.RefutationCount)
		}
		if want := []string{"db", "billing"}; !slices.Equal(got.Topics, want) {
			t.Errorf("topics: got %q, want %q", got.Topics, want)
		}
		if len(got.Anchors) != 2 || got.Anchors[0].Anchor != "path:db/schema.sql" || got.Anchors[1].Anchor != "host:db1" {
			t.Fatalf("anchors: got %+v, want path:db/schema.sql, host:db1", got.Anchors)
		}
		for _, a := range got.Anchors {
			if a.State != storage.AnchorUnknown || !a.CheckedAt.IsZero() || a.CheckedBy != "" {
				t.Errorf("anchor %+v: want state unknown, never checked", a)
			}
		}
		if again := get(t, db, got.ID); !equalRecords(again, got) {
			t.Errorf("Get: got %+v, want %+v", again, got)
		}
		log, err := db.AuditLog(ctx, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(log) != 1 || log[0].Action != storage.ActionStore || log[0].RecordID != got.ID ||
			log[0].Client != "claude-code" || log[0].Namespace != "github/acme/api" {
			t.Errorf("audit: got %+v, want one store row", log)
		}
	})

	t.Run("OKCandidate", func(t *testing.T) {
		db := storagetest.Open(t)
		nr := rec(t, "global", "t", "c")
		nr.Status, nr.Source, nr.Type = storage.StatusCandidate, storage.SourceExtraction, storage.TypeNote
		got, err := db.Store(ctx, nr)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != storage.StatusCandidate || got.Source != storage.SourceExtraction {
			t.Errorf("status, source: got %s, %s, want candidate, extraction", got.Status, got.Source)
		}
	})

	t.Run("ErrInvalid", func(t *testing.T) {
		db := storagetest.Open(t)
		for _, tt := range []struct {
			field  string
			change func(*storage.NewRecord)
		}{
			{"namespace", func(nr *storage.NewRecord) { nr.Namespace = "" }},
			{"type", func(nr *storage.NewRecord) { nr.Type = "opinion" }},
			{"title", func(nr *storage.NewRecord) { nr.Title = screen.Text{} }},
			{"content", func(nr *storage.NewRecord) { nr.Content = screen.Text{} }},
			{"confidence", func(nr *storage.NewRecord) { nr.Confidence = 0 }},
			{"confidence", func(nr *storage.NewRecord) { nr.Confidence = 1.01 }},
			{"confidence", func(nr *storage.NewRecord) { nr.Confidence = math.NaN() }},
			{"writer", func(nr *storage.NewRecord) { nr.Writer = "" }},
			{"source", func(nr *storage.NewRecord) { nr.Source = "" }},
			{"status", func(nr *storage.NewRecord) { nr.Status = storage.StatusSuperseded }},
			{"status", func(nr *storage.NewRecord) { nr.Status = "" }},
			{"topics[1]", func(nr *storage.NewRecord) { nr.Topics = []screen.Text{text(t, "a"), {}} }},
			{"anchors[0]", func(nr *storage.NewRecord) { nr.Anchors = []screen.Text{{}} }},
		} {
			nr := rec(t, "global", "t", "c")
			tt.change(&nr)
			unchanged(t, db, storage.Invalid, tt.field, func() error {
				_, err := db.Store(ctx, nr)
				return err
			})
		}
	})
}

// equalRecords compares records field by field (times with Equal).
func equalRecords(a, b *storage.Record) bool {
	return a.ID == b.ID && a.Namespace == b.Namespace && a.Type == b.Type && a.Title == b.Title &&
		a.Content == b.Content && a.Status == b.Status && a.Revision == b.Revision && a.Writer == b.Writer &&
		a.Confidence == b.Confidence && a.EffectiveConfidence == b.EffectiveConfidence &&
		a.ProofCount == b.ProofCount && a.RefutationCount == b.RefutationCount &&
		a.Supersedes == b.Supersedes && a.SupersededBy == b.SupersededBy &&
		slices.EqualFunc(a.Anchors, b.Anchors, func(x, y storage.Anchor) bool {
			return x.Anchor == y.Anchor && x.State == y.State && x.CheckedAt.Equal(y.CheckedAt) && x.CheckedBy == y.CheckedBy
		}) &&
		slices.Equal(a.Topics, b.Topics) && a.Source == b.Source &&
		a.CreatedAt.Equal(b.CreatedAt) && a.UpdatedAt.Equal(b.UpdatedAt)
}

func TestDB_Get(t *testing.T) {
	t.Parallel()
	db := storagetest.Open(t)
	a := storagetest.Store(t, db, storage.NewRecord{Title: text(t, "a")})
	b := storagetest.Store(t, db, storage.NewRecord{Title: text(t, "b")})
	if _, err := db.Forget(ctx, b.ID, 0, text(t, "gone"), "test"); err != nil {
		t.Fatal(err)
	}

	t.Run("OK", func(t *testing.T) {
		got, err := db.Get(ctx, []string{b.ID, "01NOSUCHRECORD000000000000", a.ID, b.ID, ""})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, r := range got {
			ids = append(ids, r.ID)
		}
		if want := []string{b.ID, a.ID}; !slices.Equal(ids, want) {
			t.Errorf("ids: got %v, want %v (asked order, unknown left out, repeats once)", ids, want)
		}
		if got[0].Status != storage.StatusDeleted {
			t.Errorf("status of the forgotten record: got %s, want deleted", got[0].Status)
		}
	})

	t.Run("OKNone", func(t *testing.T) {
		got, err := db.Get(ctx, nil)
		if err != nil || len(got) != 0 {
			t.Errorf("got %v, %v, want no records", got, err)
		}
	})
}

func TestDB_Update(t *testing.T) {
	t.Parallel()
	t.Run("OK", func(t *testing.T) {
		db := storagetest.Open(t)
		r := storagetest.Store(t, db, rec(t, "global", "old title", "old content"))
		got, err := db.Update(ctx, r.ID, 1, storage.Changes{
			Title:      textp(t, "new title"),
			Content:    textp(t, "new content"),
			Type:       ptr(storage.TypeConstraint),
			Confidence: ptr(0.9),
			Topics:     &[]screen.Text{text(t, "x")},
		}, "codex")
		if err != nil {
			t.Fatal(err)
		}
		if got.Revision != 2 || got.Title != "new title" || got.Content != "new content" ||
			got.Type != storage.TypeConstraint || got.Confidence != 0.9 || got.EffectiveConfidence != 0.9 ||
			!slices.Equal(got.Topics, []string{"x"}) || got.Writer != "claude-code" {
			t.Errorf("got %+v, want the changes at revision 2, writer unchanged", got)
		}
		log, _ := db.AuditLog(ctx, 1)
		if log[0].Action != storage.ActionUpdate || log[0].Client != "codex" || log[0].RecordID != r.ID ||
			!strings.Contains(log[0].Detail.String(), "title") {
			t.Errorf("audit: got %+v, want an update row by codex naming title", log[0])
		}
	})

	t.Run("OKSameValues", func(t *testing.T) {
		db := storagetest.Open(t)
		r := storagetest.Store(t, db, rec(t, "global", "title", "content"))
		before := snapshot(t, db)
		got, err := db.Update(ctx, r.ID, 1, storage.Changes{Title: textp(t, "title"), Status: ptr(storage.StatusActive)}, "test")
		if err != nil {
			t.Fatal(err)
		}
		if got.Revision != 1 {
			t.Errorf("revision: got %d, want 1 (nothing changed)", got.Revision)
		}
		if snapshot(t, db) != before {
			t.Errorf("an update that changes nothing wrote to the database")
		}
	})

	t.Run("OKAnchorsKeepState", func(t *testing.T) {
		db := storagetest.Open(t)
		nr := rec(t, "global", "t", "c")
		nr.Anchors = storagetest.Texts(t, "host:a", "host:b")
		r := storagetest.Store(t, db, nr)
		if err := db.ExecRaw(ctx, `UPDATE anchors SET state = 'available', checked_at = 1000, checked_by = 'hook' WHERE anchor = 'host:b'`); err != nil {
			t.Fatal(err)
		}
		got, err := db.Update(ctx, r.ID, 1, storage.Changes{Anchors: &[]screen.Text{text(t, "host:c"), text(t, "host:b")}}, "test")
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Anchors) != 2 {
			t.Fatalf("anchors: got %+v, want host:c, host:b", got.Anchors)
		}
		c, b := got.Anchors[0], got.Anchors[1]
		if c.Anchor != "host:c" || c.State != storage.AnchorUnknown || !c.CheckedAt.IsZero() {
			t.Errorf("new anchor: got %+v, want host:c unknown", c)
		}
		if b.Anchor != "host:b" || b.State != storage.AnchorAvailable || b.CheckedAt.UnixMilli() != 1000 || b.CheckedBy != "hook" {
			t.Errorf("kept anchor: got %+v, want host:b available, checked at 1000 by hook", b)
		}
		if got.Revision != 2 {
			t.Errorf("revision: got %d, want 2", got.Revision)
		}
	})

	t.Run("OKStatus", func(t *testing.T) {
		db := storagetest.Open(t)
		r := storagetest.Store(t, db, rec(t, "global", "t", "c"))
		for i, st := range []string{storage.StatusCandidate, storage.StatusActive} {
			got, err := db.Update(ctx, r.ID, i+1, storage.Changes{Status: ptr(st)}, "test")
			if err != nil {
				t.Fatal(err)
			}
			if got.Status != st || got.Revision != i+2 {
				t.Errorf("got %s at %d, want %s at %d", got.Status, got.Revision, st, i+2)
			}
		}
	})

	t.Run("ErrStatus", func(t *testing.T) {
		db := storagetest.Open(t)
		r := storagetest.Store(t, db, rec(t, "global", "t", "c"))
		for _, st := range []string{storage.StatusSuperseded, storage.StatusDeleted, "archived"} {
			unchanged(t, db, storage.Invalid, "changes.status", func() error {
				_, err := db.Update(ctx, r.ID, 1, storage.Changes{Status: ptr(st)}, "test")
				return err
			})
		}
	})

	t.Run("ErrConflict", func(t *testing.T) {
		db := storagetest.Open(t)
		r := storagetest.Store(t, db, rec(t, "global", "t", "c"))
		r2, err := db.Update(ctx, r.ID, 1, storage.Changes{Title: textp(t, "second")}, "test")
		if err != nil {
			t.Fatal(err)
		}
		audits := auditCount(t, db)
		e := unchanged(t, db, storage.Conflict, "revision", func() error {
			_, err := db.Update(ctx, r.ID, 1, storage.Changes{Title: textp(t, "stale")}, "test")
			return err
		})
		if e.Current == nil || !equalRecords(e.Current, r2) {
			t.Errorf("current: got %+v, want %+v", e.Current, r2)
		}
		if got := get(t, db, r.ID); got.Revision != 2 || got.Title != "second" {
			t.Errorf("got %q at %d, want \"second\" at 2", got.Title, got.Revision)
		}
		if got := auditCount(t, db); got != audits {
			t.Errorf("audit rows: got %d, want %d", got, audits)
		}
	})

	t.Run("ErrNotFound", func(t *testing.T) {
		db := storagetest.Open(t)
		unchanged(t, db, storage.NotFound, "id", func() error {
			_, err := db.Update(ctx, "01NOSUCHRECORD000000000000", 1, storage.Changes{Title: textp(t, "x")}, "test")
			return err
		})
	})

	t.Run("ErrEmpty", func(t *testing.T) {
		db := storagetest.Open(t)
		r := storagetest.Store(t, db, rec(t, "global", "t", "c"))
		unchanged(t, db, storage.Invalid, "changes", func() error {
			_, err := db.Update(ctx, r.ID, 1, storage.Changes{}, "test")
			return err
		})
	})

	t.Run("ErrInvalid", func(t *testing.T) {
		db := storagetest.Open(t)
		r := storagetest.Store(t, db, rec(t, "global", "t", "c"))
		for _, tt := range []struct {
			field string
			ch    storage.Changes
		}{
			{"changes.title", storage.Changes{Title: &screen.Text{}}},
			{"changes.content", storage.Changes{Content: &screen.Text{}}},
			{"changes.type", storage.Changes{Type: ptr("rumour")}},
			{"changes.confidence", storage.Changes{Confidence: ptr(0.0)}},
			{"changes.topics[0]", storage.Changes{Topics: &[]screen.Text{{}}}},
			{"changes.anchors[0]", storage.Changes{Anchors: &[]screen.Text{{}}}},
			{"changes.supersedes", storage.Changes{Supersedes: ptr("")}},
		} {
			unchanged(t, db, storage.Invalid, tt.field, func() error {
				_, err := db.Update(ctx, r.ID, 1, tt.ch, "test")
				return err
			})
		}
	})

	t.Run("ErrNotLive", func(t *testing.T) {
		db := storagetest.Open(t)
		deleted := storagetest.Store(t, db, rec(t, "global", "t", "c"))
		if _, err := db.Forget(ctx, deleted.ID, 1, screen.Text{}, "test"); err != nil {
			t.Fatal(err)
		}
		old := storagetest.Store(t, db, rec(t, "global", "old", "c"))
		nr := rec(t, "global", "new", "c")
		nr.Supersedes = old.ID
		storagetest.Store(t, db, nr)
		for _, id := range []string{deleted.ID, old.ID} {
			unchanged(t, db, storage.Invalid, "id", func() error {
				_, err := db.Update(ctx, id, 2, storage.Changes{Title: textp(t, "x")}, "test")
				return err
			})
		}
	})
}

func TestDB_Forget(t *testing.T) {
	t.Parallel()
	t.Run("OK", func(t *testing.T) {
		db := storagetest.Open(t)
		r := storagetest.Store(t, db, rec(t, "global", "t", "c"))
		got, err := db.Forget(ctx, r.ID, 1, text(t, "wrong repo"), "codex")
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != storage.StatusDeleted || got.Revision != 2 {
			t.Errorf("got %s at %d, want deleted at 2", got.Status, got.Revision)
		}
		log, _ := db.AuditLog(ctx, 1)
		if log[0].Action != storage.ActionForget || log[0].Client != "codex" || log[0].Detail.String() != "wrong repo" {
			t.Errorf("audit: got %+v, want a forget row with the reason", log[0])
		}
	})

	t.Run("OKAnyRevision", func(t *testing.T) {
		db := storagetest.Open(t)
		r := storagetest.Store(t, db, rec(t, "global", "t", "c"))
		if _, err := db.Update(ctx, r.ID, 1, storage.Changes{Title: textp(t, "u")}, "test"); err != nil {
			t.Fatal(err)
		}
		got, err := db.Forget(ctx, r.ID, 0, screen.Text{}, "test")
		if err != nil {
			t.Fatal(err)
		}
		if got.Revision != 3 {
			t.Errorf("revision: got %d, want 3", got.Revision)
		}
	})

	t.Run("ErrConflict", func(t *testing.T) {
		db := storagetest.Open(t)
		r := storagetest.Store(t, db, rec(t, "global", "t", "c"))
		e := unchanged(t, db, storage.Conflict, "revision", func() error {
			_, err := db.Forget(ctx, r.ID, 7, screen.Text{}, "test")
			return err
		})
		if e.Current == nil || e.Current.Revision != 1 {
			t.Errorf("current: got %+v, want the record at revision 1", e.Current)
		}
	})

	t.Run("ErrAlreadyDeleted", func(t *testing.T) {
		db := storagetest.Open(t)
		r := storagetest.Store(t, db, rec(t, "global", "t", "c"))
		if _, err := db.Forget(ctx, r.ID, 1, screen.Text{}, "test"); err != nil {
			t.Fatal(err)
		}
		unchanged(t, db, storage.Invalid, "id", func() error {
			_, err := db.Forget(ctx, r.ID, 0, screen.Text{}, "test")
			return err
		})
	})

	t.Run("ErrNotFound", func(t *testing.T) {
		db := storagetest.Open(t)
		unchanged(t, db, storage.NotFound, "id", func() error {
			_, err := db.Forget(ctx, "01NOSUCHRECORD000000000000", 0, screen.Text{}, "test")
			return err
		})
	})
}

func TestDB_Supersede(t *testing.T) {
	t.Parallel()
	t.Run("OKStore", func(t *testing.T) {
		db := storagetest.Open(t)
		old := storagetest.Store(t, db, rec(t, "global", "Use MySQL", "c"))
		nr := rec(t, "global", "Use PostgreSQL", "c")
		nr.Supersedes = old.ID
		repl, err := db.Store(ctx, nr)
		if err != nil {
			t.Fatal(err)
		}
		if repl.Supersedes != old.ID || repl.Revision != 1 || repl.Status != storage.StatusActive {
			t.Errorf("replacement: got supersedes %q at %d (%s), want %q at 1 (active)", repl.Supersedes, repl.Revision, repl.Status, old.ID)
		}
		got := get(t, db, old.ID)
		if got.Status != storage.StatusSuperseded || got.SupersededBy != repl.ID || got.Revision != 2 {
			t.Errorf("target: got %s, by %q, at %d, want superseded by %q at 2", got.Status, got.SupersededBy, got.Revision, repl.ID)
		}
		log, _ := db.AuditLog(ctx, 2)
		if log[0].Action != storage.ActionSupersede || log[0].RecordID != old.ID || log[1].Action != storage.ActionStore {
			t.Errorf("audit: got %+v, want supersede after store", log)
		}
	})

	t.Run("OKUpdateActivatesAndSupersedes", func(t *testing.T) {
		db := storagetest.Open(t)
		old := storagetest.Store(t, db, rec(t, "global", "old", "c"))
		nr := rec(t, "global", "new", "c")
		nr.Status = storage.StatusCandidate
		cand := storagetest.Store(t, db, nr)
		got, err := db.Update(ctx, cand.ID, 1, storage.Changes{Status: ptr(storage.StatusActive), Supersedes: ptr(old.ID)}, "test")
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != storage.StatusActive || got.Supersedes != old.ID || got.Revision != 2 {
			t.Errorf("got %s supersedes %q at %d, want active supersedes %q at 2", got.Status, got.Supersedes, got.Revision, old.ID)
		}
		if o := get(t, db, old.ID); o.Status != storage.StatusSuperseded || o.SupersededBy != cand.ID {
			t.Errorf("target: got %s by %q, want superseded by %q", o.Status, o.SupersededBy, cand.ID)
		}
	})

	t.Run("ErrSelf", func(t *testing.T) {
		db := storagetest.Open(t)
		a := storagetest.Store(t, db, rec(t, "global", "a", "c"))
		e := unchanged(t, db, storage.Invalid, "changes.supersedes", func() error {
			_, err := db.Update(ctx, a.ID, 1, storage.Changes{Supersedes: ptr(a.ID)}, "test")
			return err
		})
		if !strings.Contains(e.Message, "itself") {
			t.Errorf("message: got %q, want it to name the self rule", e.Message)
		}
	})

	t.Run("ErrCycle", func(t *testing.T) {
		db := storagetest.Open(t)
		a := storagetest.Store(t, db, rec(t, "global", "a", "c"))
		b := storagetest.Store(t, db, rec(t, "global", "b", "c"))
		c := storagetest.Store(t, db, rec(t, "global", "c", "c"))
		// The API cannot make this state (a superseded record is never
		// active); build it by hand: c -> b -> a while all stay active.
		if err := db.ExecRaw(ctx, `UPDATE records SET supersedes = ? WHERE id = ?`, a.ID, b.ID); err != nil {
			t.Fatal(err)
		}
		if err := db.ExecRaw(ctx, `UPDATE records SET supersedes = ? WHERE id = ?`, b.ID, c.ID); err != nil {
			t.Fatal(err)
		}
		e := unchanged(t, db, storage.Invalid, "changes.supersedes", func() error {
			_, err := db.Update(ctx, a.ID, 1, storage.Changes{Supersedes: ptr(c.ID)}, "test")
			return err
		})
		if !strings.Contains(e.Message, "cycle") {
			t.Errorf("message: got %q, want it to name the cycle rule", e.Message)
		}
	})

	t.Run("ErrOtherNamespace", func(t *testing.T) {
		db := storagetest.Open(t)
		old := storagetest.Store(t, db, rec(t, "github/acme/api", "a", "c"))
		nr := rec(t, "github/acme/web", "b", "c")
		nr.Supersedes = old.ID
		e := unchanged(t, db, storage.Invalid, "supersedes", func() error {
			_, err := db.Store(ctx, nr)
			return err
		})
		if !strings.Contains(e.Message, "namespace") {
			t.Errorf("message: got %q, want it to name the namespace rule", e.Message)
		}
	})

	t.Run("ErrFromCandidate", func(t *testing.T) {
		db := storagetest.Open(t)
		old := storagetest.Store(t, db, rec(t, "global", "a", "c"))
		nr := rec(t, "global", "b", "c")
		nr.Status, nr.Supersedes = storage.StatusCandidate, old.ID
		e := unchanged(t, db, storage.Invalid, "supersedes", func() error {
			_, err := db.Store(ctx, nr)
			return err
		})
		if !strings.Contains(e.Message, "only an active record can supersede") {
			t.Errorf("message: got %q, want it to name the active-replacement rule", e.Message)
		}
		nr.Supersedes = ""
		cand := storagetest.Store(t, db, nr)
		unchanged(t, db, storage.Invalid, "changes.supersedes", func() error {
			_, err := db.Update(ctx, cand.ID, 1, storage.Changes{Supersedes: ptr(old.ID)}, "test")
			return err
		})
		// Demoting and superseding in one call: the status applies first.
		a := storagetest.Store(t, db, rec(t, "global", "c", "c"))
		unchanged(t, db, storage.Invalid, "changes.supersedes", func() error {
			_, err := db.Update(ctx, a.ID, 1, storage.Changes{Status: ptr(storage.StatusCandidate), Supersedes: ptr(old.ID)}, "test")
			return err
		})
	})

	t.Run("ErrTargetNotActive", func(t *testing.T) {
		db := storagetest.Open(t)
		cnr := rec(t, "global", "candidate", "c")
		cnr.Status = storage.StatusCandidate
		candidate := storagetest.Store(t, db, cnr)
		deleted := storagetest.Store(t, db, rec(t, "global", "deleted", "c"))
		if _, err := db.Forget(ctx, deleted.ID, 1, screen.Text{}, "test"); err != nil {
			t.Fatal(err)
		}
		superseded := storagetest.Store(t, db, rec(t, "global", "superseded", "c"))
		snr := rec(t, "global", "replacement", "c")
		snr.Supersedes = superseded.ID
		storagetest.Store(t, db, snr)

		for _, target := range []string{candidate.ID, deleted.ID, superseded.ID} {
			nr := rec(t, "global", "new", "c")
			nr.Supersedes = target
			e := unchanged(t, db, storage.Invalid, "supersedes", func() error {
				_, err := db.Store(ctx, nr)
				return err
			})
			if !strings.Contains(e.Message, "only an active record can be superseded") {
				t.Errorf("message: got %q, want it to name the active-target rule", e.Message)
			}
		}
	})

	t.Run("ErrTargetNotFound", func(t *testing.T) {
		db := storagetest.Open(t)
		nr := rec(t, "global", "new", "c")
		nr.Supersedes = "01NOSUCHRECORD000000000000"
		unchanged(t, db, storage.NotFound, "supersedes", func() error {
			_, err := db.Store(ctx, nr)
			return err
		})
	})

	t.Run("ErrAlreadySupersedes", func(t *testing.T) {
		db := storagetest.Open(t)
		a := storagetest.Store(t, db, rec(t, "global", "a", "c"))
		b := storagetest.Store(t, db, rec(t, "global", "b", "c"))
		nr := rec(t, "global", "r", "c")
		nr.Supersedes = a.ID
		r := storagetest.Store(t, db, nr)
		unchanged(t, db, storage.Invalid, "changes.supersedes", func() error {
			_, err := db.Update(ctx, r.ID, 1, storage.Changes{Supersedes: ptr(b.ID)}, "test")
			return err
		})
	})
}

// TestDB_RecordRules: storage owns a record's rules and refuses a write
// that breaks one whoever calls it, naming the field with the message a
// client reads (docs/design.md R-R8): a title or content of white space
// alone is blank, on a store and an update; the type, status and
// confidence read as the server has always sent them.
func TestDB_RecordRules(t *testing.T) {
	t.Parallel()
	db := storagetest.Open(t)
	r := storagetest.Store(t, db, rec(t, "global", "t", "c"))
	types := "must be decision, constraint, requirement, procedure, preference, note or summary"
	for _, tt := range []struct {
		field, msg string
		call       func() error
	}{
		{"title", "is required", func() error { _, err := db.Store(ctx, rec(t, "global", "   ", "c")); return err }},
		{"content", "is required", func() error { _, err := db.Store(ctx, rec(t, "global", "t", "\n\t")); return err }},
		{"type", types, func() error {
			nr := rec(t, "global", "t", "c")
			nr.Type = "fact"
			_, err := db.Store(ctx, nr)
			return err
		}},
		{"confidence", "must be above 0 and at most 1", func() error {
			nr := rec(t, "global", "t", "c")
			nr.Confidence = math.NaN()
			_, err := db.Store(ctx, nr)
			return err
		}},
		{"changes", "changes nothing", func() error { _, err := db.Update(ctx, r.ID, 1, storage.Changes{}, "test"); return err }},
		{"changes.title", "is required", func() error {
			_, err := db.Update(ctx, r.ID, 1, storage.Changes{Title: textp(t, " ")}, "test")
			return err
		}},
		{"changes.type", types, func() error {
			_, err := db.Update(ctx, r.ID, 1, storage.Changes{Type: ptr("fact")}, "test")
			return err
		}},
		{"changes.status", "can only move between active and candidate", func() error {
			_, err := db.Update(ctx, r.ID, 1, storage.Changes{Status: ptr(storage.StatusDeleted)}, "test")
			return err
		}},
		{"statuses[0]", "must be active, candidate, superseded or deleted", func() error {
			return db.TimelinePage(ctx, storage.TimelineQuery{Statuses: []string{"Active"}}, func(*storage.Page) error { return nil })
		}},
	} {
		e := unchanged(t, db, storage.Invalid, tt.field, tt.call)
		if e != nil && e.Message != tt.msg {
			t.Errorf("%s: message %q, want %q", tt.field, e.Message, tt.msg)
		}
	}
}

package storage_test

import (
	"testing"
	"time"

	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/storagetest"
)

func TestDB_Audit(t *testing.T) {
	t.Parallel()
	t.Run("OK", func(t *testing.T) {
		db := storagetest.Open(t)
		t0 := time.Date(2026, 4, 1, 8, 0, 0, 0, time.UTC)
		db.Now = func() time.Time { return t0 }
		if err := db.Audit(ctx, storage.AuditEntry{Client: "codex", Action: "refuse-screen", Namespace: "global", Detail: text(t, "content: aws-access-key")}); err != nil {
			t.Fatal(err)
		}
		at := t0.Add(-time.Hour)
		if err := db.Audit(ctx, storage.AuditEntry{At: at, Client: "?", Action: "refuse-auth"}); err != nil {
			t.Fatal(err)
		}
		log, err := db.AuditLog(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(log) != 2 {
			t.Fatalf("got %d rows, want 2", len(log))
		}
		if log[0].Action != "refuse-auth" || !log[0].At.Equal(at) {
			t.Errorf("first: got %+v, want the latest row (refuse-auth at %v)", log[0], at)
		}
		if got := log[1]; got.Action != "refuse-screen" || got.Client != "codex" || got.Namespace != "global" ||
			got.Detail.String() != "content: aws-access-key" || !got.At.Equal(t0) {
			t.Errorf("second: got %+v, want the refuse-screen row at %v", got, t0)
		}
		if log, _ := db.AuditLog(ctx, 1); len(log) != 1 {
			t.Errorf("limit 1: got %d rows", len(log))
		}
	})

	t.Run("ErrActionRequired", func(t *testing.T) {
		db := storagetest.Open(t)
		unchanged(t, db, storage.Invalid, "action", func() error {
			return db.Audit(ctx, storage.AuditEntry{Client: "x"})
		})
	})

	t.Run("ErrAppendOnly", func(t *testing.T) {
		db := storagetest.Open(t)
		storagetest.Store(t, db, rec(t, "global", "t", "c"))
		before := snapshot(t, db)
		for _, q := range []string{
			`UPDATE audit SET detail = 'rewritten'`,
			`DELETE FROM audit`,
		} {
			err := db.ExecRaw(ctx, q)
			if !triggerAbort(err) {
				t.Errorf("%s: got %v, want a trigger abort", q, err)
			}
		}
		if snapshot(t, db) != before {
			t.Errorf("audit rows changed")
		}
	})
}

func TestDB_Refuse(t *testing.T) {
	t.Parallel()
	t.Run("OK", func(t *testing.T) {
		db := storagetest.Open(t)
		refusals := []storage.RefusalEntry{
			{Client: "codex", Action: storage.ActionRefuseScreen, Namespace: "global", RecordID: "01ABC",
				Field: "content", Pattern: "aws-access-key", Detail: "ignored for a screen refusal"},
			{Action: storage.ActionRefuseAuth, Detail: "/hearth.v1.MemoryService/Store: unknown token"},
			{Client: "codex", Action: storage.ActionRefuseConflict, Detail: "the op_id is do-not-store"},
		}
		for _, r := range refusals {
			if err := db.Refuse(ctx, r); err != nil {
				t.Fatalf("Refuse(%+v): %v", r, err)
			}
		}
		log, err := db.AuditLog(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		// Newest first; a detail that looks like a secret keeps only the
		// pattern's name.
		want := []struct {
			client, action, namespace, recordID, detail string
		}{
			{"codex", "refuse.conflict", "", "", "[screened:no-store-marker]"},
			{"-", "refuse.auth", "", "", "/hearth.v1.MemoryService/Store: unknown token"},
			{"codex", "refuse.screen", "global", "01ABC", "field content pattern aws-access-key"},
		}
		if len(log) != len(want) {
			t.Fatalf("got %d rows, want %d", len(log), len(want))
		}
		for i, w := range want {
			g := log[i]
			if g.Client != w.client || string(g.Action) != w.action || g.Namespace != w.namespace ||
				g.RecordID != w.recordID || g.Detail.String() != w.detail {
				t.Errorf("row %d: got %+v, want %+v", i, g, w)
			}
		}
	})

	t.Run("ErrNotRefusal", func(t *testing.T) {
		db := storagetest.Open(t)
		for _, a := range []storage.Action{"", storage.ActionStore, "refuse.other"} {
			unchanged(t, db, storage.Invalid, "action", func() error {
				return db.Refuse(ctx, storage.RefusalEntry{Client: "codex", Action: a, Detail: "x"})
			})
		}
	})
}

package storage_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/storagetest"
)

func TestDB_Status(t *testing.T) {
	db := storagetest.Open(t)
	storagetest.Store(t, db, rec(t, "global", "a", "c"))
	storagetest.Store(t, db, rec(t, "global", "b", "c"))
	gone := storagetest.Store(t, db, rec(t, "projects/x", "c", "c"))
	if _, err := db.Forget(ctx, gone.ID, 0, text(t, ""), "test"); err != nil {
		t.Fatal(err)
	}
	nr := rec(t, "projects/x", "d", "c")
	nr.Type, nr.Status = storage.TypeNote, storage.StatusCandidate
	storagetest.Store(t, db, nr)

	st, err := db.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wantCounts := []storage.Count{
		{Type: "decision", Status: "active", N: 2},
		{Type: "decision", Status: "deleted", N: 1},
		{Type: "note", Status: "candidate", N: 1},
	}
	if !slices.Equal(st.Counts, wantCounts) {
		t.Errorf("counts: got %+v, want %+v", st.Counts, wantCounts)
	}
	wantNS := []storage.NamespaceCount{{Namespace: "global", Records: 2}, {Namespace: "projects/x", Records: 1}}
	if !slices.Equal(st.Namespaces, wantNS) {
		t.Errorf("namespaces: got %+v, want %+v", st.Namespaces, wantNS)
	}
}

func TestDB_SetClientTokenHash(t *testing.T) {
	db := storagetest.Open(t)
	h1 := strings.Repeat("ab", 32)
	h2 := strings.Repeat("0F", 32)

	t.Run("OK", func(t *testing.T) {
		if _, ok, err := db.ClientTokenHash(ctx, "codex"); ok || err != nil {
			t.Fatalf("before: got ok %v, %v, want none", ok, err)
		}
		for _, h := range []string{h1, h2} {
			if err := db.SetClientTokenHash(ctx, "codex", h); err != nil {
				t.Fatal(err)
			}
		}
		got, ok, err := db.ClientTokenHash(ctx, "codex")
		if err != nil || !ok || got != strings.ToLower(h2) {
			t.Errorf("got %q, %v, %v, want %q (replaced, lower-case)", got, ok, err, strings.ToLower(h2))
		}
	})

	t.Run("ErrInvalid", func(t *testing.T) {
		wantErr(t, db.SetClientTokenHash(ctx, "", h1), storage.Invalid, "client")
		wantErr(t, db.SetClientTokenHash(ctx, "codex", "abc"), storage.Invalid, "token_sha256")
		wantErr(t, db.SetClientTokenHash(ctx, "codex", strings.Repeat("zz", 32)), storage.Invalid, "token_sha256")
	})
}

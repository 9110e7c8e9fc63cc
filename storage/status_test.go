package storage_test

import (
	"database/sql"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/storagetest"
)

func TestDB_Status(t *testing.T) {
	t.Parallel()
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

func TestDB_StoreClientToken(t *testing.T) {
	t.Parallel()
	db := storagetest.Open(t)
	h1 := strings.Repeat("ab", 32)
	h2 := strings.Repeat("0F", 32)

	t.Run("OK", func(t *testing.T) {
		if _, ok, err := db.ClientTokenHash(ctx, "codex"); ok || err != nil {
			t.Fatalf("before: got ok %v, %v, want none", ok, err)
		}
		for _, h := range []string{h1, h2} {
			if err := db.StoreClientToken(ctx, "codex", h, storage.ActionTokenRotate, "", ""); err != nil {
				t.Fatal(err)
			}
		}
		got, ok, err := db.ClientTokenHash(ctx, "codex")
		if err != nil || !ok || got != strings.ToLower(h2) {
			t.Errorf("got %q, %v, %v, want %q (replaced, lower-case)", got, ok, err, strings.ToLower(h2))
		}
	})

	t.Run("ErrInvalid", func(t *testing.T) {
		wantErr(t, db.StoreClientToken(ctx, "", h1, storage.ActionTokenRotate, "", ""), storage.Invalid, "client")
		wantErr(t, db.StoreClientToken(ctx, "codex", "abc", storage.ActionTokenRotate, "", ""), storage.Invalid, "token_sha256")
		wantErr(t, db.StoreClientToken(ctx, "codex", strings.Repeat("zz", 32), storage.ActionTokenRotate, "", ""), storage.Invalid, "token_sha256")
		wantErr(t, db.StoreClientToken(ctx, "codex", h1, storage.ActionStore, "", ""), storage.Invalid, "action")
	})
}

// TestDB_StatusCounts holds the counters Status reads (record_counts,
// migration 0009, and the sums kept from it, migration 0073) to a count of
// the records themselves, every few steps of a random history of stores,
// type and status changes, supersessions, forgets, purges and renames.
func TestDB_StatusCounts(t *testing.T) {
	t.Parallel()
	db := storagetest.Open(t)
	randomStatusHistory(t, db, rand.New(rand.NewPCG(9, 10)), 300, 25)
	checkStatus(t, db)
}

// TestDB_StatusBackfill: migration 0073 fills its sums from the counts
// already kept.
func TestDB_StatusBackfill(t *testing.T) {
	storagetest.SQLiteOnly(t, "a SQLite migration applied to an older file")
	t.Parallel()
	path := filepath.Join(t.TempDir(), "hearth.db")
	db, err := storage.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	randomStatusHistory(t, db, rand.New(rand.NewPCG(4, 2)), 150, 0)
	// Undo the migration: its triggers, tables and row.
	for _, q := range []string{
		`DROP TRIGGER status_counts_insert`, `DROP TRIGGER status_counts_delete`, `DROP TRIGGER status_counts_update`,
		`DROP TRIGGER status_counts_change`, // 0089 split status_counts_update in two
		`DROP TABLE type_status_counts`, `DROP TABLE namespace_counts`,
		`DELETE FROM migrations WHERE name = '0073_status_counts.sql'`,
	} {
		if err := db.ExecRaw(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = storagetest.OpenPath(t, path)
	checkStatus(t, db)
	randomStatusHistory(t, db, rand.New(rand.NewPCG(4, 3)), 50, 0)
	checkStatus(t, db)
}

// randomStatusHistory applies n random writes that change what Status
// counts, checking Status every checkEvery steps (0: never).
func randomStatusHistory(t *testing.T, db *storage.DB, r *rand.Rand, n, checkEvery int) {
	t.Helper()
	namespaces := []string{"global", "projects/x", "github/acme/api", "github/acme/web"}
	var live []*storage.Record
	for step := range n {
		if checkEvery > 0 && step%checkEvery == 0 {
			checkStatus(t, db)
		}
		switch op := r.IntN(7); {
		case op <= 1 || len(live) == 0:
			nr := rec(t, namespaces[r.IntN(len(namespaces))], fmt.Sprint("t", step), "c")
			nr.Type = storage.Types[r.IntN(len(storage.Types))]
			live = append(live, storagetest.Store(t, db, nr))
		case op == 2:
			i := r.IntN(len(live))
			typ := storage.Types[r.IntN(len(storage.Types))]
			st := []string{storage.StatusActive, storage.StatusCandidate}[r.IntN(2)]
			up, err := db.Update(ctx, live[i].ID, live[i].Revision, storage.Changes{Type: &typ, Status: &st}, "test")
			if err == nil {
				live[i] = up
			}
		case op == 3:
			i := r.IntN(len(live))
			if _, err := db.Forget(ctx, live[i].ID, 0, text(t, ""), "test"); err != nil {
				t.Fatal(err)
			}
			live = slices.Delete(live, i, i+1)
		case op == 4:
			i := r.IntN(len(live))
			if err := db.ExecRaw(ctx, `DELETE FROM records WHERE id = ?`, live[i].ID); err != nil {
				t.Fatal(err)
			}
			live = slices.Delete(live, i, i+1)
		case op == 6:
			// record_counts rebuilt from the records, as a repair would:
			// its rows go and come back whole.
			if err := db.ExecRaw(ctx, `DELETE FROM record_counts`); err != nil {
				t.Fatal(err)
			}
			if err := db.ExecRaw(ctx, `INSERT INTO record_counts (namespace, type, status, n)
				SELECT namespace, type, status, COUNT(*) FROM records GROUP BY namespace, type, status`); err != nil {
				t.Fatal(err)
			}
		default:
			from, to := "github/acme", "github/acme-renamed"
			if r.IntN(2) == 0 {
				from, to = to, from
			}
			if _, err := db.RenameNamespaces(ctx, []storage.Rename{{From: from, To: to}}); err != nil {
				t.Fatal(err)
			}
			for i, l := range live {
				if got, err := db.Get(ctx, []string{l.ID}); err == nil && len(got) == 1 {
					live[i] = got[0]
				}
			}
		}
	}
}

// checkStatus holds Status to a count of the records themselves.
func checkStatus(t *testing.T, db *storage.DB) {
	t.Helper()
	st, err := db.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var want []storage.Count
	var wantNS []storage.NamespaceCount
	for _, q := range []string{
		`SELECT string_agg(type || ':' || status || ':' || n, ',') FROM (SELECT type, status, COUNT(*) AS n FROM records GROUP BY type, status ORDER BY type, status) AS c`,
		`SELECT string_agg(namespace || ':' || n, ',') FROM (SELECT namespace, COUNT(*) AS n FROM records WHERE status <> 'deleted' GROUP BY namespace ORDER BY namespace) AS c`,
	} {
		var s sql.NullString
		if err := db.QueryRaw(ctx, true, q, &s); err != nil {
			t.Fatal(err)
		}
		for _, part := range strings.Split(s.String, ",") {
			f := strings.Split(part, ":")
			n, _ := strconv.Atoi(f[len(f)-1])
			if len(f) == 3 {
				want = append(want, storage.Count{Type: f[0], Status: f[1], N: n})
			} else if len(f) == 2 {
				wantNS = append(wantNS, storage.NamespaceCount{Namespace: f[0], Records: n})
			}
		}
	}
	if !slices.Equal(st.Counts, want) || !slices.Equal(st.Namespaces, wantNS) {
		t.Errorf("status = %+v / %+v\nrecords say %+v / %+v", st.Counts, st.Namespaces, want, wantNS)
	}
}

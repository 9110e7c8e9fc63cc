package storage_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/storagetest"
)

func TestDB_RenameNamespaces(t *testing.T) {
	t.Parallel()
	t.Run("OK", func(t *testing.T) {
		db := storagetest.Open(t)
		start := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
		db.Now = func() time.Time { return start }
		nr := rec(t, "github/old/api", "Use SQLite", "One writer, WAL.")
		nr.Anchors = storagetest.Texts(t, "path:storage/storage.go")
		api := storagetest.Store(t, db, nr)
		repl := rec(t, "github/old/api", "Use SQLite with FTS5", "One writer, WAL, FTS5.")
		repl.Supersedes = api.ID
		api2 := storagetest.Store(t, db, repl)
		web := storagetest.Store(t, db, rec(t, "github/old/web", "Tailwind", "Utility classes."))
		older := storagetest.Store(t, db, rec(t, "github/older/api", "Not moved", "A longer owner."))
		already := storagetest.Store(t, db, rec(t, "github/new/api", "Already there", "Stays."))
		glob := storagetest.Store(t, db, rec(t, "global", "Global", "Stays."))
		if err := db.CountReturned(ctx, []string{api2.ID}); err != nil {
			t.Fatal(err)
		}

		later := start.Add(time.Hour)
		db.Now = func() time.Time { return later }
		done, err := db.RenameNamespaces(ctx, []storage.Rename{
			{From: "github/old", To: "github/new"},
			{From: "gitea/nobody", To: "gitea/somebody"},
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(done) != 2 || done[0].Records() != 3 || len(done[0].Rows) != 1 || done[1].Records() != 0 || len(done[1].Rows) != 0 {
			t.Fatalf("got %+v, want 3 records moved by the first rename, nothing by the second", done)
		}
		for _, c := range []struct {
			id, ns string
			rev    int
		}{
			{api.ID, "github/new/api", 3}, // superseded (2), then moved
			{api2.ID, "github/new/api", 2},
			{web.ID, "github/new/web", 2},
			{older.ID, "github/older/api", 1},
			{already.ID, "github/new/api", 1},
			{glob.ID, "global", 1},
		} {
			r := get(t, db, c.id)
			if r.Namespace != c.ns || r.Revision != c.rev {
				t.Errorf("%s: got %s at revision %d, want %s at %d", r.Title, r.Namespace, r.Revision, c.ns, c.rev)
			}
			if moved := c.ns == "github/new/api" && c.id != already.ID || c.ns == "github/new/web"; moved && !r.UpdatedAt.Equal(later) {
				t.Errorf("%s: updated_at %v, want %v", r.Title, r.UpdatedAt, later)
			}
		}
		// Links, anchors and usage move with the records.
		if r := get(t, db, api.ID); r.SupersededBy != api2.ID || len(r.Anchors) != 1 || r.Anchors[0].Anchor != "path:storage/storage.go" {
			t.Errorf("moved record lost its links or anchors: %+v", r)
		}
		if u, err := db.Usage(ctx, api2.ID); err != nil || u.Returned != 1 {
			t.Errorf("usage: got %+v, %v, want returned 1", u, err)
		}
		// The moved records are found under their new namespace, by search too.
		hits, err := db.Search(ctx, storage.SearchQuery{Text: "sqlite", Namespaces: []string{"github/new/api"}})
		if err != nil || len(hits) != 1 || hits[0].Record.ID != api2.ID {
			t.Errorf("search after rename: got %v, %v", hits, err)
		}
		log, err := db.AuditLog(ctx, 100)
		if err != nil {
			t.Fatal(err)
		}
		var renames []storage.AuditEntry
		for _, e := range log {
			if e.Action == storage.ActionRename {
				renames = append(renames, e)
			}
		}
		if len(renames) != 1 || renames[0].Client != storage.SystemClient || renames[0].Namespace != "github/new" ||
			!strings.Contains(renames[0].Detail.String(), "github/old -> github/new: moved 3 records") {
			t.Errorf("audit: got %+v, want one rename row with its count", renames)
		}
		// The audit keeps the names it was written with.
		if e := log[len(log)-1]; e.Action != storage.ActionStore || e.Namespace != "github/old/api" {
			t.Errorf("first audit row: got %+v, want the store in github/old/api", e)
		}

		t.Run("Idempotent", func(t *testing.T) {
			before := snapshot(t, db)
			again, err := db.RenameNamespaces(ctx, []storage.Rename{{From: "github/old", To: "github/new"}})
			if err != nil || len(again) != 1 || len(again[0].Rows) != 0 {
				t.Fatalf("second run: got %+v, %v, want nothing moved", again, err)
			}
			if snapshot(t, db) != before {
				t.Errorf("a second run changed the database")
			}
		})
	})

	t.Run("ForgeMove", func(t *testing.T) {
		db := storagetest.Open(t)
		r := storagetest.Store(t, db, rec(t, "github/acme/api", "Moved forge", "From GitHub to Gitea."))
		if _, err := db.RenameNamespaces(ctx, []storage.Rename{{From: "github/acme", To: "gitea/acme"}}); err != nil {
			t.Fatal(err)
		}
		if got := get(t, db, r.ID); got.Namespace != "gitea/acme/api" || got.Revision != 2 {
			t.Errorf("got %s at %d, want gitea/acme/api at 2", got.Namespace, got.Revision)
		}
	})

	t.Run("Receipts", func(t *testing.T) {
		db := storagetest.Open(t)
		if err := db.ExecRaw(ctx, `INSERT INTO receipts (op_id, client, digest, closed_at, namespace)
			VALUES ('op-1', 'codex', 'd', 1, 'gitea/old/tools'), ('op-2', 'codex', 'd', 1, 'gitea/older/tools')`); err != nil {
			t.Fatal(err)
		}
		done, err := db.RenameNamespaces(ctx, []storage.Rename{{From: "gitea/old", To: "gitea/new"}})
		if err != nil || done[0].Rows["receipts"] != 1 || done[0].Records() != 0 {
			t.Fatalf("got %+v, %v, want 1 receipt moved", done, err)
		}
		var ns string
		if err := db.QueryRaw(ctx, false, `SELECT string_agg(namespace, ' ') FROM (SELECT namespace FROM receipts ORDER BY op_id) AS r`, &ns); err != nil || ns != "gitea/new/tools gitea/older/tools" {
			t.Errorf("receipts: got %q, %v", ns, err)
		}
	})

	t.Run("LaterTable", func(t *testing.T) {
		// A table a later migration adds is one line of renameTables; one
		// listed but not yet created is skipped.
		db := storagetest.Open(t)
		if err := db.ExecRaw(ctx, `CREATE TABLE zz_later (ns TEXT NOT NULL)`); err != nil {
			t.Fatal(err)
		}
		if err := db.ExecRaw(ctx, `INSERT INTO zz_later (ns) VALUES ('github/old/a'), ('github/old/b'), ('github/oldx/c')`); err != nil {
			t.Fatal(err)
		}
		defer storage.AddRenameTable("zz_later", "ns")()
		defer storage.AddRenameTable("zz_absent", "namespace")()
		storagetest.Store(t, db, rec(t, "github/old/a", "A", "a"))
		done, err := db.RenameNamespaces(ctx, []storage.Rename{{From: "github/old", To: "github/new"}})
		if err != nil {
			t.Fatal(err)
		}
		if got := done[0].Rows; got["records"] != 1 || got["zz_later"] != 2 || len(got) != 2 {
			t.Errorf("rows: got %v, want 1 record and 2 zz_later", got)
		}
		var n int
		if err := db.QueryRaw(ctx, false, `SELECT COUNT(*) FROM zz_later WHERE ns IN ('github/new/a', 'github/new/b', 'github/oldx/c')`, &n); err != nil || n != 3 {
			t.Errorf("zz_later: %d rows as expected, %v; want 3", n, err)
		}
		log, _ := db.AuditLog(ctx, 1)
		if len(log) != 1 || !strings.HasSuffix(log[0].Detail.String(), "moved 1 records, 2 zz_later") {
			t.Errorf("audit: got %+v", log)
		}
	})

	t.Run("ErrColumn", func(t *testing.T) {
		db := storagetest.Open(t)
		storagetest.Store(t, db, rec(t, "github/old/a", "A", "a"))
		defer storage.AddRenameTable("anchors", "namespace")()
		before := snapshot(t, db)
		_, err := db.RenameNamespaces(ctx, []storage.Rename{{From: "github/old", To: "github/new"}})
		if err == nil || storage.ErrorCode(err) != storage.Internal || !strings.Contains(err.Error(), "anchors has no column namespace") {
			t.Fatalf("got %v, want an internal error naming the table", err)
		}
		if snapshot(t, db) != before {
			t.Errorf("a failed rename changed the database")
		}
	})

	t.Run("ErrInvalid", func(t *testing.T) {
		db := storagetest.Open(t)
		storagetest.Store(t, db, rec(t, "github/old/a", "A", "a"))
		for _, c := range []struct {
			renames []storage.Rename
			field   string
		}{
			{[]storage.Rename{{From: "github", To: "github/new"}}, "renames[0].from"},
			{[]storage.Rename{{From: "github/old/a", To: "github/new"}}, "renames[0].from"},
			{[]storage.Rename{{From: "projects/old", To: "github/new"}}, "renames[0].from"},
			{[]storage.Rename{{From: "github/Old", To: "github/new"}}, "renames[0].from"},
			{[]storage.Rename{{From: "github/old", To: "github/"}}, "renames[0].to"},
			{[]storage.Rename{{From: "github/old", To: "github/new"}, {From: "gitea/x", To: "gitea/x"}}, "renames[1].to"},
		} {
			unchanged(t, db, storage.Invalid, c.field, func() error {
				_, err := db.RenameNamespaces(ctx, c.renames)
				return err
			})
		}
	})
}

// BenchmarkDB_RenameNamespaces moves 10,000 records of 100 repositories
// from one owner to another and back, one rename per iteration.
func BenchmarkDB_RenameNamespaces(b *testing.B) {
	db := storagetest.Open(b)
	const n = 10000
	recs := make([]storage.NewRecord, n)
	for i := range recs {
		recs[i] = rec(b, fmt.Sprintf("github/old/repo%d", i%100), "Title", "Content of a record.")
	}
	if err := db.StoreMany(ctx, recs); err != nil {
		b.Fatal(err)
	}
	// Other owners' records that must stay put.
	storagetest.Store(b, db, rec(b, "github/older/x", "Stays", "Stays."))
	renames := [2][]storage.Rename{{{From: "github/old", To: "github/new"}}, {{From: "github/new", To: "github/old"}}}
	i := 0
	for b.Loop() {
		done, err := db.RenameNamespaces(ctx, renames[i%2])
		if err != nil || done[0].Records() != n {
			b.Fatalf("got %+v, %v", done, err)
		}
		i++
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/record")
}

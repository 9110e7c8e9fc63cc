package storage_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/storagetest"
)

// TestSchema_Refused holds issue 41 item 8: a file whose schema is not what
// the migrations create — a trigger, view or table added, a trigger
// altered, one missing — is neither restored nor opened, and the refusal
// names the objects. A sound backup still restores and opens.
func TestSchema_Refused(t *testing.T) {
	storagetest.SQLiteOnly(t, "a SQLite file's schema check (a backup copied and changed)")
	t.Parallel()
	db := storagetest.Open(t)
	storagetest.Store(t, db, storage.NewRecord{Title: text(t, "kept")})
	backup := filepath.Join(t.TempDir(), "b.db")
	if _, err := db.Backup(ctx, backup, "admin"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		stmts []string
		want  []string
	}{
		{"ExtraTrigger", []string{`CREATE TRIGGER wipe_audit AFTER INSERT ON records BEGIN DELETE FROM audit; END`},
			[]string{"extra trigger wipe_audit (on records)"}},
		{"ExtraViewAndTable", []string{`CREATE TABLE loot (x)`, `CREATE VIEW everything AS SELECT title, content FROM records`},
			[]string{"extra table loot", "view everything"}},
		{"AlteredTrigger", []string{`DROP TRIGGER records_fts_insert`,
			`CREATE TRIGGER records_fts_insert AFTER INSERT ON records BEGIN UPDATE records SET status = 'active'; END`},
			[]string{"altered trigger records_fts_insert (on records)"}},
		{"MissingIndex", []string{`DROP INDEX records_supersedes_idx`}, []string{"missing index records_supersedes_idx (on records)"}},
		{"Gap", []string{`DELETE FROM migrations WHERE name = '0005_bootstrap.sql'`}, []string{"lacks migrations (0005_bootstrap.sql)"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			bad := filepath.Join(t.TempDir(), "bad.db")
			copyDB(t, backup, bad, c.stmts...)
			// Restore refuses it, and the live database stays as it was.
			dir := t.TempDir()
			path := filepath.Join(dir, "hearth.db")
			live := storagetest.OpenPath(t, path)
			storagetest.Store(t, live, storage.NewRecord{Title: text(t, "live")})
			if err := live.Close(); err != nil {
				t.Fatal(err)
			}
			_, err := storage.Restore(ctx, path, bad, filepath.Join(dir, "aside"))
			checkNames(t, "restore", err, c.want)
			if _, err := os.Stat(filepath.Join(dir, "aside")); err == nil {
				t.Errorf("a refused restore set the live database aside")
			}
			again := storagetest.OpenPath(t, path)
			var got string
			if err := again.QueryRaw(ctx, true, `SELECT group_concat(title) FROM records`, &got); err != nil || got != "live" {
				t.Errorf("live titles = %q (%v), want the live store's", got, err)
			}
			if c.name == "Gap" {
				return // a gap is Open's to fill (TestMigration0075 and the backfill tests)
			}
			// Copied into place by hand, it does not open either.
			_, err = storage.Open(ctx, bad)
			checkNames(t, "open", err, c.want)
		})
	}
}

func checkNames(t *testing.T, what string, err error, want []string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: got nil, want a refusal naming %v", what, want)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%s: %v\nwant it to name %q", what, err, w)
		}
	}
}

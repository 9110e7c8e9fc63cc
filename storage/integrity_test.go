package storage_test

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/storagetest"
	"github.com/ncruces/go-sqlite3/driver"
	"github.com/ncruces/go-sqlite3/ext/fts5"
)

// filledFile makes a closed database of n records in a temp dir and
// returns its path and the records' ids in the order stored.
func filledFile(t *testing.T, n int) (string, []string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "hearth.db")
	db, err := storage.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.StartUsage(ctx); err != nil {
		t.Fatal(err)
	}
	ids := make([]string, n)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < n; i += 8 {
				r, err := db.Store(ctx, rec(t, "global", fmt.Sprintf("Decision %d about caching", i),
					fmt.Sprintf("Record %d: the service retries with backoff and keeps a warm cache; lorem ipsum dolor sit amet %d.", i, i*7)))
				if err != nil {
					errs <- err
					return
				}
				ids[i] = r.ID
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path + "-wal"); err == nil {
		t.Fatal("the WAL outlived Close: damage would land beside the data")
	}
	return path, ids
}

func fileDigest(t *testing.T, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

func openPath(t *testing.T, path string) *storage.DB {
	t.Helper()
	db, err := storage.Open(ctx, path)
	if err != nil {
		t.Fatalf("open a damaged file: %v", err)
	}
	return db
}

// searchCount is how many records a search for q finds, up to 100.
func searchCount(t *testing.T, db *storage.DB, q string) int {
	t.Helper()
	hits, err := db.Search(ctx, storage.SearchQuery{Text: q, Namespaces: []string{"global"}, Limit: 100})
	if err != nil {
		t.Fatalf("search %q: %v", q, err)
	}
	return len(hits)
}

func TestDB_Open_Damaged(t *testing.T) {
	storagetest.SQLiteOnly(t, "a damaged database file")
	t.Run("ReadOnly", func(t *testing.T) {
		// Pages of the records table, its full-text index and the audit
		// are overwritten: the records cannot be rebuilt from anything,
		// so the store opens read-only and says so.
		path, ids := filledFile(t, 600)
		ps, _, leaves := storagetest.Pages(t, path, "records")
		_, _, fts := storagetest.Pages(t, path, "records_fts_data")
		_, _, audit := storagetest.Pages(t, path, "audit")
		if len(leaves) < 4 || len(fts) < 2 {
			t.Fatalf("too few pages to damage: records %d, fts %d", len(leaves), len(fts))
		}
		storagetest.Overwrite(t, path, ps, leaves[len(leaves)/2], fts[len(fts)/2], audit[len(audit)-1])
		before := fileDigest(t, path)

		db := openPath(t, path)
		d := db.Damage()
		if d == nil {
			t.Fatal("Damage() = nil for a file with overwritten pages")
		}
		for _, want := range []string{"records", "audit"} {
			if !strings.Contains(strings.Join(d.Tables, ","), want) {
				t.Errorf("damaged tables %v lack %s", d.Tables, want)
			}
		}
		if len(d.Problems) == 0 {
			t.Error("no problems reported")
		}
		for _, want := range []string{path, "read", "hearth restore", "hearth backup"} {
			if !strings.Contains(d.Message(), want) {
				t.Errorf("Message() = %q, lacks %q", d.Message(), want)
			}
		}
		if chk, ok := db.LastIntegrityCheck(); !ok || chk.Damage != d {
			t.Errorf("LastIntegrityCheck() = %+v, %v; want the damage", chk, ok)
		}

		// Writes are refused, saying why and how to restore.
		_, err := db.Store(ctx, rec(t, "global", "Refused", "The file is damaged."))
		e := wantErr(t, err, storage.ReadOnly, "")
		if !strings.Contains(e.Message, "read-only") || !strings.Contains(e.Message, "hearth restore") {
			t.Errorf("refusal %q does not say read-only and how to restore", e.Message)
		}
		if err := db.Refuse(ctx, storage.RefusalEntry{Client: "x", Action: storage.ActionRefuseAuth, Detail: "no token"}); storage.ErrorCode(err) != storage.ReadOnly {
			t.Errorf("an audit row on a damaged file: %v, want ReadOnly", err)
		}
		// A write that changes nothing still answers: the usage-start row
		// is there.
		if _, err := db.StartUsage(ctx); err != nil {
			t.Errorf("StartUsage on a damaged file: %v", err)
		}
		// Reads of what is intact work.
		if got := get(t, db, ids[0]); !strings.HasPrefix(got.Title, "Decision 0 ") {
			t.Errorf("read the first record: %q", got.Title)
		}
		// Nothing was ever written to the file.
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		if fileDigest(t, path) != before {
			t.Error("the damaged file changed while read-only")
		}
		// CheckIntegrity on a read-only store gives the same damage.
		db = openPath(t, path)
		defer db.Close()
		chk, err := db.CheckIntegrity(ctx)
		if err != nil || chk.Damage == nil {
			t.Errorf("CheckIntegrity on a read-only store = %+v, %v", chk, err)
		}
	})

	t.Run("IndexPagesRepaired", func(t *testing.T) {
		// Only the full-text index's pages are damaged, at several
		// offsets: it is created anew from the records, the file is
		// rewritten, and the repair is audited.
		path, ids := filledFile(t, 600)
		ps, interior, fts := storagetest.Pages(t, path, "records_fts_data")
		_, _, idx := storagetest.Pages(t, path, "records_fts_idx")
		pages := []int{fts[1], fts[len(fts)/2], fts[len(fts)-1], idx[0]}
		if len(interior) > 0 {
			pages = append(pages, interior[0])
		}
		storagetest.Overwrite(t, path, ps, pages...)

		db := openPath(t, path)
		defer db.Close()
		if d := db.Damage(); d != nil {
			t.Fatalf("Damage() = %v, want the index repaired", d.Message())
		}
		chk, ok := db.LastIntegrityCheck()
		if !ok || !strings.Contains(chk.Repaired, "created anew from the records") || !strings.Contains(chk.Repaired, "VACUUM") {
			t.Errorf("LastIntegrityCheck() = %+v, %v; want the index created anew", chk, ok)
		}
		rows := auditRows(t, db, storage.ActionRepair)
		if len(rows) != 1 || rows[0].Detail.String() != chk.Repaired {
			t.Errorf("repair audit rows = %+v, want one with %q", rows, chk.Repaired)
		}
		if got := searchCount(t, db, "caching"); got != 100 {
			t.Errorf("search after the repair: %d hits, want 100", got)
		}
		if got := searchCount(t, db, fmt.Sprintf("Decision %d", 777)); got == 0 {
			t.Error("search after the repair misses a record")
		}
		again, err := db.CheckIntegrity(ctx)
		if err != nil || again.Damage != nil || again.Repaired != "" {
			t.Errorf("check after the repair: %+v, %v", again, err)
		}
		if _, err := db.Store(ctx, rec(t, "global", "Written after the repair", "Writable.")); err != nil {
			t.Errorf("store after the repair: %v", err)
		}
		if got := get(t, db, ids[len(ids)-1]); got.ID == "" {
			t.Error("a record went missing")
		}
		// The index created anew keeps the merge setting of migration
		// 0087: its old settings went with its old tables.
		var automerge int
		if err := db.QueryRaw(ctx, true, `SELECT v FROM records_fts_config WHERE k = 'automerge'`, &automerge); err != nil || automerge != 8 {
			t.Errorf("automerge of the index created anew = %d (%v), want 8", automerge, err)
		}
	})

	t.Run("IndexContentRebuilt", func(t *testing.T) {
		// Bytes inside an index page's cells change, its structure
		// intact: quick_check passes, FTS5's integrity-check does not, and
		// the index is rebuilt in place.
		path, _ := filledFile(t, 600)
		ps, _, fts := storagetest.Pages(t, path, "records_fts_data")
		storagetest.OverwriteAt(t, path, int64(fts[len(fts)/2]-1)*int64(ps)+int64(ps)-600, 300)

		db := openPath(t, path)
		defer db.Close()
		if d := db.Damage(); d != nil {
			t.Fatalf("Damage() = %v, want the index rebuilt", d.Message())
		}
		chk, _ := db.LastIntegrityCheck()
		if !strings.Contains(chk.Repaired, "it was rebuilt from the records") {
			t.Errorf("Repaired = %q, want the index rebuilt", chk.Repaired)
		}
		if n := len(auditRows(t, db, storage.ActionRepair)); n != 1 {
			t.Errorf("%d repair audit rows, want 1", n)
		}
		if got := searchCount(t, db, "caching"); got != 100 {
			t.Errorf("search after the rebuild: %d hits, want 100", got)
		}
	})

	t.Run("ErrDamagedNeedsMigration", func(t *testing.T) {
		// A damaged file whose schema is older than this build cannot be
		// served read-only: the migration cannot run on it.
		path, _ := filledFile(t, 600)
		raw, err := driver.Open("file:"+path, fts5.Register)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := raw.Exec(`DELETE FROM migrations WHERE name = '0006_fts_scope.sql'`); err != nil {
			t.Fatal(err)
		}
		raw.Close()
		ps, _, leaves := storagetest.Pages(t, path, "records")
		storagetest.Overwrite(t, path, ps, leaves[len(leaves)/2])
		db, err := storage.Open(ctx, path)
		if err == nil {
			db.Close()
			t.Fatal("Open served a damaged file that needs a migration")
		}
		for _, want := range []string{path, "damaged", "0006_fts_scope.sql", "hearth restore"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q lacks %q", err, want)
			}
		}
	})

	t.Run("ErrNotADatabase", func(t *testing.T) {
		path, _ := filledFile(t, 10)
		storagetest.OverwriteAt(t, path, 0, 4096)
		db, err := storage.Open(ctx, path)
		if err == nil {
			db.Close()
			t.Fatal("Open succeeded on a file whose header is gone")
		}
		for _, want := range []string{path, "damaged beyond use", "hearth restore", "move the file aside"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q lacks %q", err, want)
			}
		}
	})
}

func TestDB_CheckIntegrity(t *testing.T) {
	storagetest.SQLiteOnly(t, "the file's integrity check and the FTS5 index's repair; PostgreSQL checks its own pages")
	t.Run("OK", func(t *testing.T) {
		db := storagetest.Open(t)
		if _, err := db.Store(ctx, rec(t, "global", "Sound", "Nothing to repair.")); err != nil {
			t.Fatal(err)
		}
		chk, err := db.CheckIntegrity(ctx)
		if err != nil || chk.Damage != nil || chk.Repaired != "" {
			t.Fatalf("CheckIntegrity = %+v, %v", chk, err)
		}
		rows := auditRows(t, db, storage.ActionIntegrity)
		if len(rows) != 1 || !strings.HasPrefix(rows[0].Detail.String(), "quick_check ok, full-text index ok") {
			t.Errorf("integrity audit rows = %+v", rows)
		}
	})

	t.Run("IndexRebuilt", func(t *testing.T) {
		// The index loses a row's terms behind the records' back, as a
		// bug or a half-applied write could make it: the nightly check
		// finds the disagreement and rebuilds the index.
		db := storagetest.Open(t)
		r, err := db.Store(ctx, rec(t, "global", "Findable title", "Findable content."))
		if err != nil {
			t.Fatal(err)
		}
		if err := db.ExecRaw(ctx, `INSERT INTO records_fts (records_fts, rowid, title, content, fts_scope)
			SELECT 'delete', s.fts_rowid, s.title, s.content, s.fts_scope
			FROM records_fts_source AS s JOIN records AS r ON r.seq = s.fts_rowid & 1099511627775 WHERE r.id = ?`, r.ID); err != nil {
			t.Fatal(err)
		}
		if got := searchCount(t, db, "findable"); got != 0 {
			t.Fatalf("the damage did not take: %d hits", got)
		}
		chk, err := db.CheckIntegrity(ctx)
		if err != nil || chk.Damage != nil || !strings.Contains(chk.Repaired, "rebuilt from the records") {
			t.Fatalf("CheckIntegrity = %+v, %v", chk, err)
		}
		if got := searchCount(t, db, "findable"); got != 1 {
			t.Errorf("search after the rebuild: %d hits, want 1", got)
		}
		if n := len(auditRows(t, db, storage.ActionRepair)); n != 1 {
			t.Errorf("%d repair audit rows, want 1", n)
		}
		if rows := auditRows(t, db, storage.ActionIntegrity); len(rows) != 1 || !strings.Contains(rows[0].Detail.String(), "sound after repair") {
			t.Errorf("integrity audit rows = %+v", rows)
		}
	})
}

// TestDB_CheckLater: opened with CheckLater, a file that needs no
// migration is served before it is read whole; CheckDeferred then finds
// its damage and makes the store read-only exactly as a check at open
// does (TestDB_Open_Damaged/ReadOnly).
func TestDB_CheckLater(t *testing.T) {
	storagetest.SQLiteOnly(t, "the whole-file check Open defers")
	t.Parallel()
	t.Run("DamageFoundAfterOpen", func(t *testing.T) {
		t.Parallel()
		path, ids := filledFile(t, 600)
		ps, _, leaves := storagetest.Pages(t, path, "records")
		_, _, audit := storagetest.Pages(t, path, "audit")
		storagetest.Overwrite(t, path, ps, leaves[len(leaves)/2], audit[len(audit)-1])
		before := fileDigest(t, path)

		db, err := storage.Open(ctx, path, storage.CheckLater())
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if d := db.Damage(); d != nil {
			t.Fatalf("Damage() = %v right after Open: the file was read whole", d.Message())
		}
		if chk, ok := db.LastIntegrityCheck(); ok {
			t.Fatalf("LastIntegrityCheck() = %+v right after Open, want none", chk)
		}
		chk, err := db.CheckDeferred(ctx)
		if err != nil || chk.Damage == nil {
			t.Fatalf("CheckDeferred = %+v, %v; want the damage", chk, err)
		}
		if d := db.Damage(); d != chk.Damage || !strings.Contains(strings.Join(d.Tables, ","), "records") {
			t.Errorf("Damage() = %+v, want %+v naming records", d, chk.Damage)
		}
		if last, ok := db.LastIntegrityCheck(); !ok || last.Damage != chk.Damage {
			t.Errorf("LastIntegrityCheck() = %+v, %v; want the damage", last, ok)
		}
		_, err = db.Store(ctx, rec(t, "global", "Refused", "The file is damaged."))
		if e := wantErr(t, err, storage.ReadOnly, ""); !strings.Contains(e.Message, "hearth restore") {
			t.Errorf("refusal %q does not say how to restore", e.Message)
		}
		if got := get(t, db, ids[0]); !strings.HasPrefix(got.Title, "Decision 0 ") {
			t.Errorf("read the first record: %q", got.Title)
		}
		// A second call checks nothing again.
		if again, err := db.CheckDeferred(ctx); err != nil || again.Damage != chk.Damage {
			t.Errorf("CheckDeferred again = %+v, %v", again, err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		if fileDigest(t, path) != before {
			t.Error("the damaged file changed")
		}
	})

	t.Run("SoundNotAudited", func(t *testing.T) {
		t.Parallel()
		path, _ := filledFile(t, 50)
		db, err := storage.Open(ctx, path, storage.CheckLater())
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		chk, err := db.CheckDeferred(ctx)
		if err != nil || chk.Damage != nil || chk.Repaired != "" {
			t.Fatalf("CheckDeferred = %+v, %v", chk, err)
		}
		if last, ok := db.LastIntegrityCheck(); !ok || last.Damage != nil {
			t.Errorf("LastIntegrityCheck() = %+v, %v", last, ok)
		}
		// As the check at open: a sound file leaves no audit row.
		if rows := auditRows(t, db, storage.ActionIntegrity); len(rows) != 0 {
			t.Errorf("integrity audit rows = %+v, want none", rows)
		}
	})

	t.Run("IndexRepaired", func(t *testing.T) {
		t.Parallel()
		// Bytes inside an index page change: found after the open, the
		// index is rebuilt and the repair audited, as at open.
		path, _ := filledFile(t, 600)
		ps, _, fts := storagetest.Pages(t, path, "records_fts_data")
		storagetest.OverwriteAt(t, path, int64(fts[len(fts)/2]-1)*int64(ps)+int64(ps)-600, 300)
		db, err := storage.Open(ctx, path, storage.CheckLater())
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		chk, err := db.CheckDeferred(ctx)
		if err != nil || chk.Damage != nil || !strings.Contains(chk.Repaired, "it was rebuilt from the records") {
			t.Fatalf("CheckDeferred = %+v, %v; want the index rebuilt", chk, err)
		}
		if rows := auditRows(t, db, storage.ActionRepair); len(rows) != 1 || rows[0].Detail.String() != chk.Repaired {
			t.Errorf("repair audit rows = %+v, want one with %q", rows, chk.Repaired)
		}
		if got := searchCount(t, db, "caching"); got != 100 {
			t.Errorf("search after the rebuild: %d hits, want 100", got)
		}
	})

	t.Run("CheckedAtOpen", func(t *testing.T) {
		t.Parallel()
		// What CheckLater does not defer: a file that needs a migration
		// is checked before it runs, and one whose opening meets damage
		// (here its schema page) is checked then, as without the option.
		path, _ := filledFile(t, 600)
		raw, err := driver.Open("file:"+path, fts5.Register)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := raw.Exec(`DELETE FROM migrations WHERE name = '0006_fts_scope.sql'`); err != nil {
			t.Fatal(err)
		}
		raw.Close()
		ps, _, leaves := storagetest.Pages(t, path, "records")
		storagetest.Overwrite(t, path, ps, leaves[len(leaves)/2])
		if db, err := storage.Open(ctx, path, storage.CheckLater()); err == nil {
			db.Close()
			t.Error("Open with CheckLater served a damaged file that needs a migration")
		} else if !strings.Contains(err.Error(), "0006_fts_scope.sql") {
			t.Errorf("error %q does not name the migration", err)
		}

		path, _ = filledFile(t, 10)
		storagetest.OverwriteAt(t, path, 100, 3000)
		var errs [2]error
		for i, opts := range [][]storage.Option{nil, {storage.CheckLater()}} {
			var db *storage.DB
			if db, errs[i] = storage.Open(ctx, path, opts...); db != nil {
				db.Close()
			}
		}
		plain, later := errs[0], errs[1]
		if plain == nil || later == nil || plain.Error() != later.Error() {
			t.Errorf("a damaged schema page: Open = %v, with CheckLater %v; want the same refusal", plain, later)
		}
	})
}

package storage_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/storagetest"
)

// cjkIndexed returns the ids of the records the CJK index holds, sorted:
// on PostgreSQL, those whose records.cjk is not NULL.
func cjkIndexed(t *testing.T, db *storage.DB) []string {
	t.Helper()
	q := `SELECT IFNULL(group_concat(id, ' '), '') FROM (
		SELECT r.id FROM records AS r JOIN records_cjk_docsize AS d ON d.id = r.seq ORDER BY r.id)`
	if db.Backend() == storage.BackendPostgres {
		q = `SELECT coalesce(string_agg(id, ' ' ORDER BY id), '') FROM records WHERE cjk IS NOT NULL`
	}
	var list string
	if err := db.QueryRaw(ctx, true, q, &list); err != nil {
		t.Fatal(err)
	}
	return strings.Fields(list)
}

// checkCJKIndex fails t unless the CJK index holds exactly the records of
// want and FTS5 finds it consistent with them.
func checkCJKIndex(t *testing.T, db *storage.DB, want ...*storage.Record) {
	t.Helper()
	var ids []string
	for _, r := range want {
		ids = append(ids, r.ID)
	}
	slices.Sort(ids)
	if got := cjkIndexed(t, db); !slices.Equal(got, ids) {
		t.Errorf("CJK index holds %v, want %v", got, ids)
	}
	// rank 1: the index is compared with its content, the view of the
	// records that hold CJK text. PostgreSQL's is a generated column.
	if db.Backend() == storage.BackendPostgres {
		return
	}
	if err := db.ExecRaw(ctx, `INSERT INTO records_cjk (records_cjk, rank) VALUES ('integrity-check', 1)`); err != nil {
		t.Errorf("integrity-check: %v", err)
	}
}

func searchIDs(t *testing.T, db *storage.DB, query string) []string {
	t.Helper()
	hits, err := db.Search(ctx, storage.SearchQuery{Text: query, Limit: 10})
	if err != nil {
		t.Fatalf("%q: %v", query, err)
	}
	var ids []string
	for _, h := range hits {
		ids = append(ids, h.Record.ID)
	}
	slices.Sort(ids)
	return ids
}

// TestDB_CJKIndex: the CJK index holds the records whose title or content
// has a CJK character and no other, through stores, edits that add or
// remove CJK text, and deletes (migration 0081); CJK search is unchanged.
func TestDB_CJKIndex(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		db := storagetest.Open(t)
		store := func(title, content string) *storage.Record {
			return storagetest.Store(t, db, storage.NewRecord{Title: storagetest.Text(t, title), Content: storagetest.Text(t, content)})
		}
		en := store("Cache policy", "Invalidate the cache on write.")
		zh := store("数据库迁移", "部署前先运行迁移。")
		mixed := store("docker notes", "docker 部署 uses compose")
		ko := store("Retry policy", "재시도는 지수 백오프를 사용합니다.")
		// Other scripts and symbols, also above ASCII, yield no CJK token.
		other := store("naïve café — résumé → 🚀", "Ελληνικά, русский, ％ and ・ punctuation")
		checkCJKIndex(t, db, zh, mixed, ko)

		// English becomes Chinese, Korean becomes English.
		en = update(t, db, en, storage.Changes{Content: textp(t, "写入时使缓存失效。")})
		ko = update(t, db, ko, storage.Changes{Content: textp(t, "Retries back off exponentially.")})
		// A title-only edit of a CJK record re-indexes it.
		zh = update(t, db, zh, storage.Changes{Title: textp(t, "表结构迁移")})
		// Forgetting changes no text; deleting the row removes it.
		if _, err := db.Forget(ctx, mixed.ID, 0, text(t, "done"), "claude-code"); err != nil {
			t.Fatal(err)
		}
		if err := db.ExecRaw(ctx, `DELETE FROM records WHERE id = ?`, other.ID); err != nil {
			t.Fatal(err)
		}
		checkCJKIndex(t, db, en, zh, mixed)

		for _, tt := range []struct {
			query string
			want  []*storage.Record
		}{
			{"缓存", []*storage.Record{en}},
			{"表结构", []*storage.Record{zh}},
			{"数据库", nil}, // the old title
			{"재시도", nil}, // the old content
			{"exponentially", []*storage.Record{ko}},
		} {
			var want []string
			for _, r := range tt.want {
				want = append(want, r.ID)
			}
			slices.Sort(want)
			if got := searchIDs(t, db, tt.query); !slices.Equal(got, want) {
				t.Errorf("%q: got %v, want %v", tt.query, got, want)
			}
		}
	})

	// Migration 0081 keeps, of the index 0008 built over every record,
	// only the records with CJK text.
	t.Run("Migration", func(t *testing.T) {
		storagetest.SQLiteOnly(t, "a SQLite migration applied to an older file")
		path := filepath.Join(t.TempDir(), "hearth.db")
		db, err := storage.Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		var recs []*storage.Record
		for _, s := range [][2]string{{"Cache policy", "Invalidate on write."}, {"数据库迁移", "部署前先运行迁移。"}, {"Deploy", "デプロイは火曜日"}} {
			recs = append(recs, storagetest.Store(t, db, storage.NewRecord{Title: storagetest.Text(t, s[0]), Content: storagetest.Text(t, s[1])}))
		}
		// Back to the schema of 0008: every record indexed.
		for _, q := range []string{
			`DROP TRIGGER records_cjk_insert`, `DROP TRIGGER records_cjk_delete`, `DROP TRIGGER records_cjk_update`,
			`DROP TABLE records_cjk`, `DROP VIEW records_cjk_source`,
			`CREATE VIRTUAL TABLE records_cjk USING fts5 (title, content, content = 'records', content_rowid = 'seq', tokenize = 'hearth_cjk')`,
			`INSERT INTO records_cjk (records_cjk) VALUES ('rebuild')`,
			`CREATE TRIGGER records_cjk_insert AFTER INSERT ON records BEGIN
				INSERT INTO records_cjk (rowid, title, content) VALUES (new.seq, new.title, new.content); END`,
			`CREATE TRIGGER records_cjk_delete AFTER DELETE ON records BEGIN
				INSERT INTO records_cjk (records_cjk, rowid, title, content) VALUES ('delete', old.seq, old.title, old.content); END`,
			`CREATE TRIGGER records_cjk_update AFTER UPDATE OF title, content ON records BEGIN
				INSERT INTO records_cjk (records_cjk, rowid, title, content) VALUES ('delete', old.seq, old.title, old.content);
				INSERT INTO records_cjk (rowid, title, content) VALUES (new.seq, new.title, new.content); END`,
			`DELETE FROM migrations WHERE name = '0081_cjk_only.sql'`,
		} {
			if err := db.ExecRaw(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		if got := cjkIndexed(t, db); len(got) != len(recs) {
			t.Fatalf("before the migration the index holds %d records, want all %d", len(got), len(recs))
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		db = storagetest.OpenPath(t, path)
		checkCJKIndex(t, db, recs[1], recs[2])
		if got, want := searchIDs(t, db, "火曜日"), []string{recs[2].ID}; !slices.Equal(got, want) {
			t.Errorf("火曜日: got %v, want %v", got, want)
		}
	})
}

// update applies ch to r at its revision and returns the record after.
func update(t *testing.T, db *storage.DB, r *storage.Record, ch storage.Changes) *storage.Record {
	t.Helper()
	got, err := db.Update(ctx, r.ID, r.Revision, ch, "claude-code")
	if err != nil {
		t.Fatalf("update %s: %v", r.ID, err)
	}
	return got
}

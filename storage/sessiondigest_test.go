package storage_test

import (
	"path/filepath"
	"testing"

	"github.com/ncruces/go-sqlite3/driver"
	"github.com/ncruces/go-sqlite3/ext/fts5"

	"github.com/hearth-memory/hearth/storage/storagetest"
)

// sessionToken is a made-up GitHub token given as a session id.
const sessionToken = "ghp_R8mK2xQ7vN4pL9sT3wY6zB1cF5hJ0dG8aE2u"

// TestDB_RecordAsk_SessionDigest holds issue 41's first finding: a
// recorded search keeps a keyed digest of its session, never the id as
// given, and a get in the same session still marks the search used, also
// after a restart. The id is looked for in the database's files on SQLite,
// in every column of every table on PostgreSQL (storagetest.Contains).
func TestDB_RecordAsk_SessionDigest(t *testing.T) {
	t.Parallel()
	const ns = "github/acme/api"
	path := storagetest.Place(t)
	db := storagetest.OpenPath(t, path)
	recordAsks(t, db,
		ask(t, ns, "lan-reader", sessionToken, "where do the deploy logs go", "L1"),
		ask(t, ns, "lan-reader", sessionToken, "where do the deploy logs go", "L2"),
	)
	use(t, db, "lan-reader", sessionToken, "L1")
	if q := questionsOf(t, db, ns)[0]; q.Asks != 2 || q.Sessions != 1 || q.Used != 1 {
		t.Fatalf("asks %d sessions %d used %d, want 2, 1, 1", q.Asks, q.Sessions, q.Used)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if !storagetest.Contains(t, path, "lan-reader") {
		t.Fatal("the client's name, stored as given, is not found: the search below would find nothing")
	}
	if storagetest.Contains(t, path, sessionToken) {
		t.Fatal("the session id is stored as given")
	}
	// The key is the database's: the same session matches after a restart.
	db = storagetest.OpenPath(t, path)
	use(t, db, "lan-reader", sessionToken, "L2")
	if q := questionsOf(t, db, ns)[0]; q.Used != 2 {
		t.Errorf("used %d after a get in the same session after a restart, want 2", q.Used)
	}
}

// TestMigration_SessionDigest: sessions recorded before migration 0090
// are digested in place, and a get in the same session still finds them.
func TestMigration_SessionDigest(t *testing.T) {
	storagetest.SQLiteOnly(t, "a SQLite migration applied to an older file")
	t.Parallel()
	const ns = "github/acme/api"
	path := filepath.Join(t.TempDir(), "db")
	db := storagetest.OpenPath(t, path)
	recordAsks(t, db, ask(t, ns, "claude-code", "s1", "where do the deploy logs go", "L1"))
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	// Back to the schema before 0090, with a session as it was kept then.
	raw, err := driver.Open("file:"+path, fts5.Register)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`DELETE FROM migrations WHERE name = '0090_session_digest.sql'`,
		`DROP TABLE digest_keys`,
		`UPDATE asked SET session = '` + sessionToken + `'`,
		`UPDATE question_sessions SET session = '` + sessionToken + `'`,
		`VACUUM`,
	} {
		if _, err := raw.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	raw.Close()
	if !storagetest.Contains(t, path, sessionToken) {
		t.Fatal("setup: the old session is not in the file")
	}
	db = storagetest.OpenPath(t, path)
	use(t, db, "claude-code", sessionToken, "L1")
	if q := questionsOf(t, db, ns)[0]; q.Asks != 1 || q.Sessions != 1 || q.Used != 1 {
		t.Errorf("asks %d sessions %d used %d after the migration, want 1, 1, 1", q.Asks, q.Sessions, q.Used)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if storagetest.Contains(t, path, sessionToken) {
		t.Error("the migration left the session id in the file")
	}
}

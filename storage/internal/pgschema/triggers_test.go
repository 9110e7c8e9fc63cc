package pgschema_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/hearth-memory/hearth/storage/internal/pgtest"
	"github.com/hearth-memory/hearth/storage/testwait"
)

// The derived tables follow the rows they derive from, as SQLite's
// triggers keep them: counts, the session-start packet's order, the vector
// change feed, forgotten vectors, question counters and demand, stale
// answers; and the audit stays append-only.
func TestTriggers_DerivedTables(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.Open(t)
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := db.ExecContext(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	// rows is q's rows, one "a b c" string each, joined by "; ".
	rows := func(q string) string {
		t.Helper()
		var out []string
		for _, r := range query(t, db, q) {
			out = append(out, strings.Join(r, " "))
		}
		return strings.Join(out, "; ")
	}
	check := func(q, want string) {
		t.Helper()
		if got := rows(q); got != want {
			t.Errorf("%s\n got  %s\n want %s", q, got, want)
		}
	}
	const ins = `INSERT INTO records (id, namespace, type, title, content, status, revision, writer,
		confidence, effective_confidence, source, created_at, updated_at)
		VALUES ($1, 'a', $2, 't', 'c', $3, 1, 'w', 0.8, $4, 'store', 1, 1)`
	exec(ins, "r1", "note", "active", 0.8)
	exec(ins, "r2", "decision", "active", 0.9)
	exec(ins, "r3", "note", "candidate", 0.5)

	check(`SELECT namespace, type, status, n FROM record_counts ORDER BY type, status`,
		"a decision active 1; a note active 1; a note candidate 1")
	check(`SELECT type, status, n FROM type_status_counts ORDER BY type, status`,
		"decision active 1; note active 1; note candidate 1")
	check(`SELECT namespace, n FROM namespace_counts`, "a 3")
	check(`SELECT record_id, section, type_rank, confidence, uses FROM bootstrap_rank ORDER BY record_id`,
		"r2 2 3 0.9 0; r3 1 0 0 0")
	check(`SELECT namespace, section, n FROM bootstrap_counts ORDER BY section`, "a 1 1; a 2 1")
	check(`SELECT r.id, v.version FROM vector_changes v JOIN records r ON r.seq = v.record_seq ORDER BY v.version`,
		"r1 1; r2 2; r3 3")

	// An unavailable anchor files a note in the third section; available
	// again, it leaves.
	exec(`INSERT INTO anchors (record_id, anchor, position, state) VALUES ('r1', 'entity:light.x', 0, 'unavailable')`)
	check(`SELECT record_id, section FROM bootstrap_rank ORDER BY record_id`, "r1 3; r2 2; r3 1")
	exec(`UPDATE anchors SET state = 'available' WHERE record_id = 'r1'`)
	check(`SELECT record_id, section FROM bootstrap_rank ORDER BY record_id`, "r2 2; r3 1")

	// Use moves a durable record's order key.
	exec(`INSERT INTO usage (record_id, returned, fetched) VALUES ('r2', 2, 1)`)
	check(`SELECT uses FROM bootstrap_rank WHERE record_id = 'r2'`, "3")

	// Forgetting moves the counts, drops the vector and moves the feed.
	exec(`INSERT INTO embeddings (record_id, digest, model, snapshot, vector, embedded_at) VALUES ('r1', 'd', 'm', 's', '\x00', 1)`)
	check(`SELECT r.id, v.version FROM vector_changes v JOIN records r ON r.seq = v.record_seq ORDER BY v.version`,
		"r2 2; r3 3; r1 4")
	exec(`UPDATE records SET status = 'deleted' WHERE id = 'r1'`)
	check(`SELECT count(*) FROM embeddings`, "0")
	check(`SELECT namespace, type, status, n FROM record_counts ORDER BY type, status`,
		"a decision active 1; a note candidate 1; a note deleted 1")
	check(`SELECT type, status, n FROM type_status_counts ORDER BY type, status`,
		"decision active 1; note active 0; note candidate 1; note deleted 1")
	check(`SELECT namespace, n FROM namespace_counts`, "a 2")
	check(`SELECT r.id, v.version FROM vector_changes v JOIN records r ON r.seq = v.record_seq ORDER BY v.version`,
		"r2 2; r3 3; r1 6")

	// Questions: client c1 asks in sessions s1 and s2, c2 in s1; weight is
	// 1 + 1/2 for c1 and 1 for c2.
	exec(`INSERT INTO questions (id, namespace, key, text, created_at) VALUES ('q1', 'a', 'k', 'why', 1)`)
	for _, a := range [][2]string{{"c1", "s1"}, {"c1", "s2"}, {"c2", "s1"}, {"c1", "s1"}} {
		exec(`INSERT INTO asked (question, at, client, session, query) VALUES ((SELECT seq FROM questions WHERE id = 'q1'), 5, $1, $2, 'why')`, a[0], a[1])
	}
	check(`SELECT asks, used, sessions, clients, weight, demand, last_asked_at FROM questions`, "4 0 3 2 2.5 2.5 5")
	exec(`UPDATE asked SET used = 1 WHERE client = 'c2'`)
	check(`SELECT asks, used, demand FROM questions`, "4 1 1.875")
	exec(`DELETE FROM asked WHERE client = 'c1' AND session = 's2'`)
	check(`SELECT asks, used, sessions, clients, weight FROM questions`, "3 1 2 2 2")
	exec(`DELETE FROM asked WHERE client = 'c2'`)
	check(`SELECT asks, used, sessions, clients, weight FROM questions`, "2 0 1 1 1")

	// An answer citing r2 stops being current when r2 changes.
	exec(`INSERT INTO answers (question, text, basis, kind, generated_at) VALUES ((SELECT seq FROM questions), 'x', 'b', 'extractive', 1)`)
	exec(`INSERT INTO answer_sources (record_id, question) VALUES ('r2', (SELECT seq FROM questions))`)
	check(`SELECT current FROM answers`, "1")
	exec(`UPDATE records SET content = 'changed', updated_at = 2 WHERE id = 'r2'`)
	check(`SELECT current FROM answers`, "0")

	// Purging a record takes its derived rows with it.
	exec(`DELETE FROM records WHERE id = 'r3'`)
	check(`SELECT record_id FROM bootstrap_rank ORDER BY record_id`, "r2")
	check(`SELECT namespace, section, n FROM bootstrap_counts ORDER BY section`, "a 2 1")

	// The audit: rows go in; none changes; one goes only at or before a
	// recorded prune's cutoff; TRUNCATE is refused.
	exec(`INSERT INTO audit (at, client, action) VALUES (10, 'c', 'store'), (20, 'c', 'store')`)
	for _, q := range []string{
		`UPDATE audit SET client = 'x'`,
		`DELETE FROM audit WHERE at = 10`,
		`TRUNCATE audit`,
	} {
		if _, err := db.ExecContext(ctx, q); err == nil || !strings.Contains(err.Error(), "append-only") {
			t.Errorf("%s: %v, want an append-only refusal", q, err)
		}
	}
	exec(`INSERT INTO audit_prunes (at, cutoff) VALUES (30, 10)`)
	exec(`DELETE FROM audit WHERE at = 10`)
	check(`SELECT at FROM audit`, "20")
	for _, q := range []string{`UPDATE audit_prunes SET cutoff = 20`, `DELETE FROM audit_prunes`, `TRUNCATE audit_prunes`} {
		if _, err := db.ExecContext(ctx, q); err == nil || !strings.Contains(err.Error(), "append-only") {
			t.Errorf("%s: %v, want an append-only refusal", q, err)
		}
	}
}

// Two front ends storing at once: the second record's change feed version
// waits for the first's transaction to commit and comes after it, so a
// reader that applied the first's version never misses the second's.
// Without the feed's lock both would read the same MAX(version). The two
// records share no count row (namespace, type and status all differ), so
// nothing else makes the second wait.
func TestVectorChanges_CommitOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.Open(t)
	const ins = `INSERT INTO records (id, namespace, type, title, content, status, revision, writer,
		confidence, effective_confidence, source, created_at, updated_at)
		VALUES ($1, $2, $3, 't', 'c', $4, 1, 'w', 0.8, 0.8, 'store', 1, 1)`
	tx1, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx1.ExecContext(ctx, ins, "r1", "a", "note", "active"); err != nil {
		tx1.Rollback()
		t.Fatal(err)
	}
	tx2, err := db.BeginTx(ctx, nil)
	if err != nil {
		tx1.Rollback()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := tx2.ExecContext(ctx, ins, "r2", "b", "decision", "candidate")
		done <- err
	}()
	// However the test ends, the first transaction ends before the second
	// is rolled back: rolling back waits for the second's statement.
	defer func() {
		tx1.Rollback()
		<-done
		tx2.Rollback()
	}()
	testwait.WaitFor(t, "the second store waiting on the feed's lock", func() bool {
		return query(t, db, `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted`)[0][0] == "1"
	})
	if err := tx1.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		done <- nil
		t.Fatal(err)
	}
	done <- nil
	if err := tx2.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := query(t, db, `SELECT r.id, v.version FROM vector_changes v JOIN records r ON r.seq = v.record_seq ORDER BY r.id`); fmt.Sprint(got) != "[[r1 1] [r2 2]]" {
		t.Errorf("feed %v, want r1 at 1 and r2 at 2", got)
	}
}

package storage

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/hearth-memory/hearth/storage/screen"
)

// TestStore_TriggerSteps: the statement a store runs (storeTx's INSERT,
// with every trigger it fires) builds no temporary table (migrations 0083,
// 0085: the single writer pays for each on every store), and a new
// namespace still gets the next key once, a known one keeps its own.
func TestStore_TriggerSteps(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openTestDB(t)

	// EXPLAIN lists the programs of the triggers after the statement's own.
	rows, err := db.lite.Writer().QueryContext(ctx, `EXPLAIN
		INSERT INTO records (
			id, namespace, type, title, content, status, revision, writer,
			confidence, effective_confidence, topics, source, created_at, updated_at
		) VALUES (?, ?, ?, ?, ?, ?, 1, ?, ?, ?, ?, ?, ?, ?)`, make([]any, 13)...)
	if err != nil {
		t.Fatal(err)
	}
	var ops, temp []string
	for rows.Next() {
		var addr, p1, p2, p3, p4, p5, comment any
		var op string
		if err := rows.Scan(&addr, &op, &p1, &p2, &p3, &p4, &p5, &comment); err != nil {
			t.Fatal(err)
		}
		ops = append(ops, op)
		if op == "OpenEphemeral" || op == "OpenAutoindex" {
			temp = append(temp, fmt.Sprint(addr))
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	rows.Close()
	if len(ops) < 100 || !strings.Contains(strings.Join(ops, " "), "Program") {
		t.Fatalf("EXPLAIN gave %d opcodes without the triggers' programs: the check below would see nothing", len(ops))
	}
	if len(temp) > 0 {
		t.Errorf("a store opens %d temporary tables (at %v), want none", len(temp), temp)
	}

	key := func(ns string) (k int64, keys int) {
		t.Helper()
		if err := db.lite.Reader().QueryRowContext(ctx, `SELECT (SELECT key FROM namespace_keys WHERE namespace = ?), (SELECT count(*) FROM namespace_keys)`, ns).Scan(&k, &keys); err != nil {
			t.Fatal(err)
		}
		return k, keys
	}
	store := func(ns string) {
		t.Helper()
		title, _ := screen.Check("title", "Zebrafish feeding in "+ns)
		content, _ := screen.Check("content", "The zebrafish are fed twice a day.")
		if _, err := db.Store(ctx, NewRecord{Namespace: ns, Type: TypeNote, Title: title, Content: content,
			Confidence: 0.8, Writer: "t", Source: SourceStore, Status: StatusActive}); err != nil {
			t.Fatal(err)
		}
	}
	store("global")
	store("github/acme/api")
	store("global")
	store("github/acme/api")
	g, _ := key("global")
	a, keys := key("github/acme/api")
	if g != 1 || a != 2 || keys != 2 {
		t.Errorf("keys global %d, github/acme/api %d, %d in all; want 1, 2 and 2", g, a, keys)
	}
	for _, ns := range []string{"global", "github/acme/api"} {
		if hits, err := db.Search(ctx, SearchQuery{Text: "zebrafish", Namespaces: []string{ns}}); err != nil || len(hits) != 2 {
			t.Errorf("zebrafish in %s: %d hits (%v), want 2", ns, len(hits), err)
		}
	}
}

package storage

import (
	"context"
	"fmt"
	"testing"

	"github.com/hearth-memory/hearth/storage/internal/fts"
)

// TestGateHolds: the probe before a gate of rare words counts the rows of
// the range that hold one of them, up to limit, so that a gate letting
// fewer than limit through is not run.
func TestGateHolds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openTestDB(t)
	store := func(ns, content string) { storeNote(t, db, ns, "note", content) }
	for i := range 3 {
		store("github/acme/api", fmt.Sprintf("the zorblax %d", i))
	}
	for i := range 30 {
		store("github/acme/web", fmt.Sprintf("the zorblax %d", i))
		store("github/acme/api", fmt.Sprintf("a quuxly %d", i))
	}
	if err := db.read(ctx, "test", func(tx *txn) error {
		keys, err := db.namespaceKeysTx(ctx, tx, []string{"github/acme/api", "github/acme/web"}, db.eng.Gen())
		if err != nil || len(keys) != 2 {
			return fmt.Errorf("keys %v: %v", keys, err)
		}
		api := &fts.RowRange{Lo: keys[0] << fts.SeqBits, Hi: keys[0]<<fts.SeqBits | fts.SeqMask}
		web := &fts.RowRange{Lo: keys[1] << fts.SeqBits, Hi: keys[1]<<fts.SeqBits | fts.SeqMask}
		for _, tt := range []struct {
			name  string
			gate  string
			rows  *fts.RowRange
			limit int
			want  bool
		}{
			{"few in api", `"zorblax"`, api, 10, false},
			{"just enough in api", `"zorblax"`, api, 3, true},
			{"many in web", `"zorblax"`, web, 10, true},
			{"either word in api", `"zorblax" OR "quuxly"`, api, 20, true},
			{"everywhere", `"zorblax"`, nil, 33, true},
			{"not everywhere", `"zorblax"`, nil, 34, false},
			{"absent", `"nowhere"`, nil, 1, false},
		} {
			if got := fts.GateHolds(ctx, tx, tt.gate, tt.rows, tt.limit); got != tt.want {
				t.Errorf("%s: fts.GateHolds(%s, limit %d) = %v, want %v", tt.name, tt.gate, tt.limit, got, tt.want)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// gate is fts.Index.GateOf's gate and phrase count, as the pruning tests read them.
func (db *DB) gate(words []string) (string, int) {
	g, n, _ := db.fts.GateOf(words)
	return g, n
}

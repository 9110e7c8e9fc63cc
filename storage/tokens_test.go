package storage_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/storagetest"
)

// BenchmarkDB_ClientTokens is what every call with a token costs the
// interceptor to read the stored digests (docs/operations.md, "Tokens"):
// ClientTokens with eight generated clients stored, on the backend
// HEARTH_STORAGE_BACKEND names.
func BenchmarkDB_ClientTokens(b *testing.B) {
	db := storagetest.Open(b)
	for i := range 8 {
		if err := db.StoreClientToken(ctx, fmt.Sprint("client-", i), strings.Repeat(fmt.Sprintf("%02x", i), 32), storage.ActionTokenGenerate, "", ""); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		list, err := db.ClientTokens(ctx)
		if err != nil || len(list) != 8 {
			b.Fatalf("ClientTokens = %d tokens, %v; want 8", len(list), err)
		}
	}
}

// TestDB_ClientTokensNow holds ClientTokens to the database's digests of
// the moment, which the interceptor relies on for every call: a digest
// stored is listed by the next ClientTokens, while other goroutines list
// them all along (on SQLite the list is kept between token writes, and a
// list read during a write must not be kept past it). On PostgreSQL a
// second DB on the same database, another front end, lists it as well.
func TestDB_ClientTokensNow(t *testing.T) {
	t.Parallel()
	place := storagetest.Place(t)
	db := storagetest.OpenPath(t, place)
	other := db
	if storagetest.Postgres() {
		other = storagetest.OpenPath(t, place)
	}
	stop := make(chan struct{})
	var readers sync.WaitGroup
	for range 4 {
		readers.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := db.ClientTokens(ctx); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	for i := range 50 {
		hash := strings.Repeat(fmt.Sprintf("%02x", i), 32)
		if err := db.StoreClientToken(ctx, "codex", hash, storage.ActionTokenRotate, "", ""); err != nil {
			t.Fatal(err)
		}
		for _, d := range []*storage.DB{db, other} {
			list, err := d.ClientTokens(ctx)
			if err != nil || len(list) != 1 || list[0].SHA256 != hash {
				t.Fatalf("after storing digest %d: %+v, %v; want it", i, list, err)
			}
		}
	}
	close(stop)
	readers.Wait()
}

// TestDB_StoreClientTokenGenerateOnce: a generated token is stored only
// as a client's first; a second generation, as of a front end that
// started beside another on an empty database, is Exists and changes
// nothing, so the two do not each keep a token of their own (on
// PostgreSQL, two DBs generating at once: exactly one wins).
func TestDB_StoreClientTokenGenerateOnce(t *testing.T) {
	t.Parallel()
	place := storagetest.Place(t)
	db := storagetest.OpenPath(t, place)
	h1, h2 := strings.Repeat("ab", 32), strings.Repeat("cd", 32)
	if err := db.StoreClientToken(ctx, "codex", h1, storage.ActionTokenGenerate, "", ""); err != nil {
		t.Fatal(err)
	}
	wantErr(t, db.StoreClientToken(ctx, "codex", h2, storage.ActionTokenGenerate, "", ""), storage.Exists, "client")
	if got, _, err := db.ClientTokenHash(ctx, "codex"); err != nil || got != h1 {
		t.Errorf("after a second generation: %q, %v, want the first digest", got, err)
	}
	if rows := auditRows(t, db, storage.ActionTokenGenerate); len(rows) != 1 {
		t.Errorf("token.generate rows %+v, want 1", rows)
	}
	if err := db.StoreClientToken(ctx, "codex", h2, storage.ActionTokenRotate, "", ""); err != nil {
		t.Fatalf("a rotation over a generated digest: %v", err)
	}

	if !storagetest.Postgres() {
		return
	}
	dbs := []*storage.DB{db, storagetest.OpenPath(t, place)}
	errs := make([]error, len(dbs))
	var wg sync.WaitGroup
	for i, d := range dbs {
		wg.Go(func() {
			errs[i] = d.StoreClientToken(ctx, "claude-code", strings.Repeat(fmt.Sprintf("%02x", i), 32), storage.ActionTokenGenerate, "", "")
		})
	}
	wg.Wait()
	if (errs[0] == nil) == (errs[1] == nil) {
		t.Fatalf("two front ends generating at once: %v and %v, want one stored and one Exists", errs[0], errs[1])
	}
}

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

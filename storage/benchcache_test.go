package storage_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/storagetest"
)

// benchDB returns a store prefilled with n generated records. With
// HEARTH_BENCH_CACHE set to a folder, the prefilled file is kept there
// (storage-<n>.db) and copied for each run, since filling 100k records takes
// minutes; a changed schema needs the cache emptied by hand.
func benchDB(b *testing.B, n int) *storage.DB { return benchDBT(b, n) }

func benchDBT(b testing.TB, n int) *storage.DB {
	return benchStore(b, n, func(tb testing.TB) *storage.DB { return storagetest.Open(tb) })
}

// benchStore is benchDBT with the store made by open when no cache is
// set; a cached store is a SQLite file, whatever open makes.
func benchStore(b testing.TB, n int, open func(testing.TB) *storage.DB) *storage.DB {
	b.Helper()
	dir := os.Getenv("HEARTH_BENCH_CACHE")
	if dir == "" {
		db := open(b)
		fill(b, db, n)
		return db
	}
	cached := filepath.Join(dir, "storage-"+strconv.Itoa(n)+".db")
	if _, err := os.Stat(cached); err != nil {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			b.Fatal(err)
		}
		db, err := storage.Open(context.Background(), cached)
		if err != nil {
			b.Fatal(err)
		}
		fill(b, db, n)
		if err := db.Close(); err != nil {
			b.Fatal(err)
		}
	}
	path := filepath.Join(b.TempDir(), "hearth.db")
	if err := storagetest.CopyFile(cached, path); err != nil {
		b.Fatal(err)
	}
	return storagetest.OpenPath(b, path)
}

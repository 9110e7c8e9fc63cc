// Package storagetest opens real storage databases for tests: a SQLite file
// in the test's temporary directory, closed when the test ends.
package storagetest

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/hearth-memory/hearth/internal/fileio"
	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/screen"
)

// Open opens a new, migrated database in tb.TempDir(). It is closed by
// tb.Cleanup; a failure to open or close fails the test.
func Open(tb testing.TB) *storage.DB {
	tb.Helper()
	return OpenPath(tb, filepath.Join(tb.TempDir(), "hearth.db"))
}

// OpenPath opens the database at path (for tests that reopen one file),
// closing it by tb.Cleanup.
func OpenPath(tb testing.TB, path string) *storage.DB {
	tb.Helper()
	db, err := storage.Open(context.Background(), path)
	if err != nil {
		tb.Fatalf("storage.Open(%q): %v", path, err)
	}
	tb.Cleanup(func() {
		if err := db.Close(); err != nil {
			tb.Errorf("close: %v", err)
		}
	})
	return db
}

// Text screens s for a test, failing the test if the screen refuses it.
func Text(tb testing.TB, s string) screen.Text {
	tb.Helper()
	t, err := screen.Check("test", s)
	if err != nil {
		tb.Fatalf("screen.Check(%q): %v", s, err)
	}
	return t
}

// Texts screens each of ss with Text.
func Texts(tb testing.TB, ss ...string) []screen.Text {
	tb.Helper()
	out := make([]screen.Text, len(ss))
	for i, s := range ss {
		out[i] = Text(tb, s)
	}
	return out
}

// Store stores nr with defaults filled in for the fields tests rarely care
// about (namespace "global", type note, confidence 0.8, writer "test", source
// store, status active), failing the test on error.
func Store(tb testing.TB, db *storage.DB, nr storage.NewRecord) *storage.Record {
	tb.Helper()
	if nr.Namespace == "" {
		nr.Namespace = "global"
	}
	if nr.Type == "" {
		nr.Type = storage.TypeNote
	}
	if nr.Confidence == 0 {
		nr.Confidence = 0.8
	}
	if nr.Writer == "" {
		nr.Writer = "test"
	}
	if nr.Source == "" {
		nr.Source = storage.SourceStore
	}
	if nr.Status == "" {
		nr.Status = storage.StatusActive
	}
	if nr.Title.String() == "" {
		nr.Title = Text(tb, "untitled")
	}
	if nr.Content.String() == "" {
		nr.Content = Text(tb, "no content")
	}
	rec, err := db.Store(context.Background(), nr)
	if err != nil {
		tb.Fatalf("Store: %v", err)
	}
	return rec
}

// CopyFile copies from to a file to (0600), replacing it: the benchmarks'
// prefilled stores are copied into each run's directory.
func CopyFile(from, to string) error {
	if err := os.Remove(to); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return fileio.Copy(from, to)
}

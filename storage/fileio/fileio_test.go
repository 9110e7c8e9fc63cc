package fileio

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

func TestWriteAtomic_ReplacesAndLeavesNoTemporary(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteAtomic(path, []byte("new"), 0o600); err != nil {
		t.Fatalf("WriteAtomic: %v", err)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "new" {
		t.Fatalf("read %q, %v; want new", b, err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, %v; want 0600", fi.Mode().Perm(), err)
	}
	if es, _ := os.ReadDir(dir); len(es) != 1 {
		t.Fatalf("the directory holds %d entries; want only the file", len(es))
	}
}

func TestWriteAtomic_NoDirectory(t *testing.T) {
	t.Parallel()
	if err := WriteAtomic(filepath.Join(t.TempDir(), "missing", "f"), []byte("x"), 0o600); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("err %v; want not exist", err)
	}
}

func TestCopy(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "src"), filepath.Join(dir, "dst")
	if err := os.WriteFile(src, []byte("content"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Copy(src, dst); err != nil {
		t.Fatalf("Copy: %v", err)
	}
	if b, err := os.ReadFile(dst); err != nil || string(b) != "content" {
		t.Fatalf("read %q, %v; want content", b, err)
	}
	if fi, err := os.Stat(dst); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, %v; want 0600", fi.Mode().Perm(), err)
	}
	// dst exists now: a second copy refuses and leaves it alone.
	if err := Copy(src, dst); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("second Copy: %v; want exists", err)
	}
	// A directory opens but does not read: the copy fails after making
	// its destination, and takes it away.
	if err := Copy(dir, filepath.Join(dir, "other")); err == nil {
		t.Fatal("Copy of a directory succeeded")
	}
	if _, err := os.Stat(filepath.Join(dir, "other")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a failed copy left its destination: %v", err)
	}
}

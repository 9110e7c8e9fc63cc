// Package fileio holds the two file operations several packages need: a
// write that a reader sees whole or not at all (WriteAtomic) and a copy to
// a new file (Copy).
package fileio

import (
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// WriteAtomic replaces path with data through a temporary file in the same
// directory, synced and then renamed over it: a reader sees the old file or
// the new one, never a part. The file gets mode perm; the directory must
// exist.
func WriteAtomic(path string, data []byte, perm fs.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // a no-op once renamed
	if err := f.Chmod(perm); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// Copy copies src to dst, which must not exist (see Create).
func Copy(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	return Create(dst, func(w io.Writer) error {
		_, err := io.Copy(w, in)
		return err
	})
}

// Create makes dst, which must not exist (an error matching fs.ErrExist
// if it does), as a 0600 file holding what write writes, synced before
// Create returns; on an error dst is removed.
func Create(dst string, write func(io.Writer) error) error {
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	err = write(out)
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(dst)
	}
	return err
}

package engine

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/ncruces/go-sqlite3"

	"github.com/hearth-memory/hearth/storage/internal/errs"
)

// openError words a failure to open the database: it names the file and
// what to do, by the driver's code. It is what `hearth serve` prints when
// it cannot start.
func (e *Engine) openError(err error) error {
	if err == nil {
		return nil
	}
	var coded *errs.Error
	if errors.As(err, &coded) {
		return err
	}
	switch {
	case corrupt(err):
		return fmt.Errorf("storage: cannot open the database %s: %w: the file is damaged beyond use; "+
			"stop Hearth and restore the latest good backup with `hearth restore --data DIR FILE` (FILE made by `hearth backup`), "+
			"or move the file aside (with its -wal and -shm files) to start with an empty memory", e.path, err)
	case diskFull(err), errors.Is(err, sqlite3.IOERR) && nearlyFull(e.path):
		// SQLite cannot always tell a full disk from another I/O error
		// (the shared memory file failing to grow when the WAL opens): a
		// disk with next to nothing free says.
		return fmt.Errorf("storage: cannot open the database %s: %w: the disk is full (%s): free space there and start again",
			e.path, err, freeSpace(e.path))
	case errors.Is(err, sqlite3.CANTOPEN), errors.Is(err, sqlite3.READONLY), errors.Is(err, sqlite3.PERM), errors.Is(err, sqlite3.AUTH):
		return fmt.Errorf("storage: cannot open the database %s: %w: check that the file and its folder exist and that the user Hearth runs as may read and write them (%s)",
			e.path, err, freeSpace(e.path))
	}
	return fmt.Errorf("storage: open %s: %w (%s)", e.path, err, freeSpace(e.path))
}

// nearlyFull reports whether the disk holding path has less than 1 MiB
// free: too little for SQLite to open a database in WAL mode.
func nearlyFull(path string) bool {
	s := diskSpace(filepath.Dir(path))
	return s.Known && s.Free < 1<<20
}

// freeSpace words the free space of the disk holding path.
func freeSpace(path string) string {
	if s := diskSpace(filepath.Dir(path)); s.Known {
		return FormatBytes(s.Free) + " free on its disk"
	}
	return "free space unknown"
}

package vfswrap

import (
	"bytes"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/ncruces/go-sqlite3/driver"
	"github.com/ncruces/go-sqlite3/vfs"
)

// spillTo returns a memJournal with limit whose spill file is a temporary
// file of the OS VFS, and a counter of the spills.
func spillTo(t *testing.T, limit int) (*memJournal, *atomic.Int64) {
	t.Helper()
	var spills atomic.Int64
	base := vfs.Find("").(vfs.VFSFilename)
	return &memJournal{limit: limit, spill: func() (vfs.File, error) {
		spills.Add(1)
		f, _, err := base.OpenFilename(nil, vfs.OPEN_SUBJOURNAL|vfs.OPEN_READWRITE|vfs.OPEN_CREATE|vfs.OPEN_EXCLUSIVE|vfs.OPEN_DELETEONCLOSE)
		return f, err
	}}, &spills
}

func page(b byte, n int) []byte { return bytes.Repeat([]byte{b}, n) }

// readAll reads size bytes from offset 0 of f.
func readAll(t *testing.T, f vfs.File, size int) []byte {
	t.Helper()
	got := make([]byte, size)
	if n, err := f.ReadAt(got, 0); n != size || err != nil && err != io.EOF {
		t.Fatalf("ReadAt(%d bytes) = %d, %v", size, n, err)
	}
	return got
}

func TestMemJournal(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		m, spills := spillTo(t, 1<<20)
		defer m.Close()
		if _, err := m.WriteAt(page('a', 100), 0); err != nil {
			t.Fatal(err)
		}
		// A write past the end leaves zeros in the gap.
		if _, err := m.WriteAt(page('b', 50), 200); err != nil {
			t.Fatal(err)
		}
		want := append(append(page('a', 100), page(0, 100)...), page('b', 50)...)
		if got := readAll(t, m, 250); !bytes.Equal(got, want) {
			t.Errorf("content = %q, want %q", got, want)
		}
		if size, _ := m.Size(); size != 250 {
			t.Errorf("Size = %d, want 250", size)
		}
		if spills.Load() != 0 {
			t.Errorf("spilled %d times under the limit, want 0", spills.Load())
		}
	})
	t.Run("ShortRead", func(t *testing.T) {
		m, _ := spillTo(t, 1<<20)
		defer m.Close()
		m.WriteAt(page('a', 10), 0)
		buf := make([]byte, 20)
		if n, err := m.ReadAt(buf, 5); n != 5 || err != io.EOF {
			t.Errorf("ReadAt across the end = %d, %v; want 5, io.EOF", n, err)
		}
		if n, err := m.ReadAt(buf, 10); n != 0 || err != io.EOF {
			t.Errorf("ReadAt at the end = %d, %v; want 0, io.EOF", n, err)
		}
	})
	t.Run("Truncate", func(t *testing.T) {
		m, _ := spillTo(t, 1<<20)
		defer m.Close()
		m.WriteAt(page('a', 100), 0)
		if err := m.Truncate(40); err != nil {
			t.Fatal(err)
		}
		if size, _ := m.Size(); size != 40 {
			t.Errorf("Size after Truncate(40) = %d", size)
		}
		// Rewritten from its start, as SQLite does after a savepoint.
		m.WriteAt(page('c', 10), 0)
		if got, want := readAll(t, m, 40), append(page('c', 10), page('a', 30)...); !bytes.Equal(got, want) {
			t.Errorf("content = %q, want %q", got, want)
		}
		if err := m.Truncate(60); err != nil {
			t.Fatal(err)
		}
		if got, want := readAll(t, m, 60), append(append(page('c', 10), page('a', 30)...), page(0, 20)...); !bytes.Equal(got, want) {
			t.Errorf("content after growing = %q, want %q", got, want)
		}
	})
	t.Run("Spill", func(t *testing.T) {
		m, spills := spillTo(t, 4096)
		defer m.Close()
		for i := range 3 {
			if _, err := m.WriteAt(page(byte('a'+i), 2048), int64(i)*2048); err != nil {
				t.Fatal(err)
			}
		}
		if spills.Load() != 1 || m.file == nil {
			t.Fatalf("spills = %d past the limit, want 1", spills.Load())
		}
		want := append(append(page('a', 2048), page('b', 2048)...), page('c', 2048)...)
		if got := readAll(t, m, len(want)); !bytes.Equal(got, want) {
			t.Error("content after the spill differs from what was written")
		}
		if err := m.Truncate(1000); err != nil {
			t.Fatal(err)
		}
		if size, _ := m.Size(); size != 1000 {
			t.Errorf("Size after Truncate(1000) = %d", size)
		}
	})
	t.Run("ErrSpill", func(t *testing.T) {
		refused := errors.New("no room")
		m := &memJournal{limit: 10, spill: func() (vfs.File, error) { return nil, refused }}
		if _, err := m.WriteAt(page('a', 20), 0); !errors.Is(err, refused) {
			t.Errorf("WriteAt past the limit with no spill file = %v, want %v", err, refused)
		}
	})
}

// TestMemorySubjournals runs savepoints whose subjournal passes SQLite's
// own 64 KiB and then the limit, through a VFS that keeps subjournals in
// memory: what a savepoint rolls back is gone, what it kept is there.
func TestMemorySubjournals(t *testing.T) {
	for _, c := range []struct {
		limit     int
		tempFiles bool
	}{{8 << 20, false}, {96 << 10, true}} {
		limit := c.limit
		base := &countingVFS{VFSFilename: vfs.Find("").(vfs.VFSFilename)}
		name := fmt.Sprintf("memsj-%d", limit)
		vfs.Register(name, New(base, func(_ Op, _ string, err error) error { return err }, MemorySubjournals(limit)))
		path := filepath.Join(t.TempDir(), "db")
		db, err := driver.Open("file:" + path + "?vfs=" + name + "&_pragma=journal_mode(wal)&_txlock=immediate")
		if err != nil {
			t.Fatal(err)
		}
		db.SetMaxOpenConns(1)
		mustExec := func(tx *sql.Tx, q string, args ...any) {
			t.Helper()
			if _, err := tx.Exec(q, args...); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		if _, err := db.Exec(`CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT); CREATE INDEX t_v_idx ON t (v)`); err != nil {
			t.Fatal(err)
		}
		tx, err := db.Begin()
		if err != nil {
			t.Fatal(err)
		}
		mustExec(tx, `INSERT INTO t (k, v) SELECT value, printf('%.500c', value) FROM generate_series(1, 2000)`)
		for round := range 3 {
			mustExec(tx, `SAVEPOINT s`)
			// Rewrites every page: the subjournal holds them all.
			mustExec(tx, `UPDATE t SET v = v || ?`, round)
			if round == 1 {
				mustExec(tx, `ROLLBACK TO s`)
			}
			mustExec(tx, `RELEASE s`)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		var n int
		var v string
		if err := db.QueryRow(`SELECT COUNT(*), MAX(substr(v, 501)) FROM t`).Scan(&n, &v); err != nil {
			t.Fatal(err)
		}
		if n != 2000 || v != "02" {
			t.Errorf("limit %d: %d rows ending %q, want 2000 ending \"02\"", limit, n, v)
		}
		if got := base.temps.Load() > 0; got != c.tempFiles {
			t.Errorf("limit %d: %d temporary files, want some: %v", limit, base.temps.Load(), c.tempFiles)
		}
		db.Close()
	}
}

// countingVFS counts the temporary files opened through it.
type countingVFS struct {
	vfs.VFSFilename
	temps atomic.Int64
}

func (c *countingVFS) OpenFilename(name *vfs.Filename, flags vfs.OpenFlag) (vfs.File, vfs.OpenFlag, error) {
	if name == nil {
		c.temps.Add(1)
	}
	return c.VFSFilename.OpenFilename(name, flags)
}

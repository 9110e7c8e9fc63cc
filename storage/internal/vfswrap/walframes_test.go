package vfswrap

import (
	"bytes"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ncruces/go-sqlite3/driver"
	"github.com/ncruces/go-sqlite3/vfs"
)

// walWrites registers a VFS over the OS's, with JoinFrames when join is
// set, and returns its name and a counter of the writes that reach its
// write-ahead logs.
func walWrites(t *testing.T, name string, join bool) *atomic.Int64 {
	t.Helper()
	var writes atomic.Int64
	hook := func(op Op, file string, err error) error {
		if op == Write && err == nil && strings.HasSuffix(file, "-wal") {
			writes.Add(1)
		}
		return err
	}
	var opts []Option
	if join {
		opts = append(opts, JoinFrames())
	}
	vfs.Register(name, New(vfs.Find("").(vfs.VFSFilename), hook, opts...))
	t.Cleanup(func() { vfs.Unregister(name) })
	return &writes
}

// crashCopy copies the database at path and its write-ahead log, as the
// disk holds them while the connection that wrote them stays open (what a
// process killed at this moment leaves), into a new directory, and returns
// the copy opened through the OS VFS: SQLite rebuilds the log's index from
// the frames it finds whole.
func crashCopy(t *testing.T, path string) *sql.DB {
	t.Helper()
	dir := t.TempDir()
	for _, suffix := range []string{"", "-wal"} {
		b, err := os.ReadFile(path + suffix)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "db"+suffix), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	db, err := driver.Open("file:" + filepath.Join(dir, "db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// TestJoinFrames commits through a VFS that joins frames and one that
// does not: the log holds the same frames, each commit's written in one
// write, and after every commit the files on disk hold the whole commit,
// the one whose checksums SQLite rewrites (a transaction that overwrote
// frames it had already spilled) included.
func TestJoinFrames(t *testing.T) {
	type run struct {
		writes, frames int64
		// commitWrites is the writes of the commits of 20 rows.
		commitWrites int64
	}
	const commits = 40
	runs := map[bool]run{}
	for _, join := range []bool{false, true} {
		t.Run(fmt.Sprintf("join=%v", join), func(t *testing.T) {
			name := fmt.Sprintf("joinframes-%v", join)
			writes := walWrites(t, name, join)
			path := filepath.Join(t.TempDir(), "db")
			// No checkpoint: the log keeps every frame, to count them.
			db, err := driver.Open("file:" + path + "?vfs=" + name +
				"&_pragma=journal_mode(wal)&_pragma=synchronous(normal)&_pragma=wal_autocheckpoint(0)&_txlock=immediate")
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			db.SetMaxOpenConns(1)
			if _, err := db.Exec(`CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT); CREATE INDEX t_v_idx ON t (v)`); err != nil {
				t.Fatal(err)
			}
			// check opens what the disk holds after a commit and holds it
			// to want rows and a sound file; it returns the copy.
			check := func(want int) *sql.DB {
				t.Helper()
				c := crashCopy(t, path)
				var n int
				var ok string
				if err := c.QueryRow(`SELECT count(*) FROM t`).Scan(&n); err != nil {
					t.Fatal(err)
				}
				if err := c.QueryRow(`PRAGMA integrity_check`).Scan(&ok); err != nil {
					t.Fatal(err)
				}
				if n != want || ok != "ok" {
					t.Fatalf("the files on disk after the commit hold %d rows (integrity: %s), want %d (ok)", n, ok, want)
				}
				return c
			}
			rows := 0
			before := writes.Load()
			for i := range commits {
				if _, err := db.Exec(`INSERT INTO t (v) SELECT printf('%d-%.300c', value, 'x') FROM generate_series(1, 20)`); err != nil {
					t.Fatal(err)
				}
				rows += 20
				if i%10 == 0 {
					check(rows)
				}
			}
			check(rows)
			commitWrites := writes.Load() - before

			// A transaction larger than the page cache spills frames to the
			// log before it commits; its commit then overwrites those frames
			// in place and rewrites their checksums, header by header.
			conn, err := db.Conn(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := conn.ExecContext(t.Context(), `PRAGMA cache_size = 10`); err != nil {
				t.Fatal(err)
			}
			tx, err := conn.BeginTx(t.Context(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.Exec(`INSERT INTO t (v) SELECT printf('big-%d-%.500c', value, 'y') FROM generate_series(1, 400)`); err != nil {
				t.Fatal(err)
			}
			if _, err := tx.Exec(`UPDATE t SET v = v || 'z' WHERE v LIKE 'big-%'`); err != nil {
				t.Fatal(err)
			}
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
			conn.Close()
			rows += 400
			var z int
			if err := check(rows).QueryRow(`SELECT count(*) FROM t WHERE v LIKE 'big-%z'`).Scan(&z); err != nil || z != 400 {
				t.Fatalf("the spilled transaction's update is in %d rows (%v), want 400", z, err)
			}

			fi, err := os.Stat(path + "-wal")
			if err != nil {
				t.Fatal(err)
			}
			var pageSize int64
			if err := db.QueryRow(`PRAGMA page_size`).Scan(&pageSize); err != nil {
				t.Fatal(err)
			}
			runs[join] = run{writes: writes.Load(), frames: (fi.Size() - 32) / (FrameHeader + pageSize), commitWrites: commitWrites}
		})
	}
	off, on := runs[false], runs[true]
	t.Logf("frames %d/%d; writes to the log: %d joined, %d not; %d commits of 20 rows: %d writes joined, %d not",
		on.frames, off.frames, on.writes, off.writes, commits, on.commitWrites, off.commitWrites)
	if off.writes < 2*off.frames {
		t.Errorf("without JoinFrames, %d writes for %d frames: want two a frame", off.writes, off.frames)
	}
	if on.commitWrites != commits || off.commitWrites < 4*commits {
		t.Errorf("%d commits of a few pages took %d writes with JoinFrames and %d without: want one a commit, and two a frame",
			commits, on.commitWrites, off.commitWrites)
	}
	// The spilled transaction reads the log between its frames, and each
	// checksum rewrite is a write of its own.
	if on.writes >= off.writes/2 {
		t.Errorf("with JoinFrames, %d writes for %d frames (%d without): want fewer than half", on.writes, on.frames, off.writes)
	}
}

// TestWALFile drives a log's file under JoinFrames by hand: frames that
// continue an append wait for a commit frame's page and go with it in one
// write; any other call writes them first; a header that does not
// continue an append is written at once.
func TestWALFile(t *testing.T) {
	var writes atomic.Int64
	var fail atomic.Bool
	refused := errors.New("refused")
	hook := func(op Op, _ string, err error) error {
		if op == Write && err == nil {
			if fail.Load() {
				return refused
			}
			writes.Add(1)
		}
		return err
	}
	// The OS VFS opens only the files SQLite names; this is the log's
	// file as JoinFrames wraps it, over a plain file.
	open := func(t *testing.T) (vfs.File, string) {
		t.Helper()
		path := filepath.Join(t.TempDir(), "db-wal")
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		writes.Store(0)
		return &walFile{file: &file{File: plainFile{f}, name: path, hook: hook}, end: -1}, path
	}
	// hdr is a commit frame's header (every byte set, the database's
	// size included), mid a header of any other frame.
	hdr, pg := page('h', FrameHeader), page('p', 100)
	mid := page('m', FrameHeader)
	copy(mid[4:8], []byte{0, 0, 0, 0})
	write := func(t *testing.T, f vfs.File, p []byte, off int64) {
		t.Helper()
		if n, err := f.WriteAt(p, off); n != len(p) || err != nil {
			t.Fatalf("WriteAt(%d bytes at %d) = %d, %v", len(p), off, n, err)
		}
	}
	// appendFrame writes the log header at 0 and a frame header after it.
	appendFrame := func(t *testing.T, f vfs.File) {
		t.Helper()
		write(t, f, page('w', 32), 0)
		write(t, f, hdr, 32)
	}
	read := func(t *testing.T, path string) []byte {
		t.Helper()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}

	t.Run("Joined", func(t *testing.T) {
		f, path := open(t)
		defer f.Close()
		appendFrame(t, f)
		if got := read(t, path); writes.Load() != 1 || len(got) != 32 {
			t.Fatalf("after the frame header: %d writes, %d bytes; want 1 write, 32 bytes (the header held)", writes.Load(), len(got))
		}
		write(t, f, pg, 32+FrameHeader)
		if writes.Load() != 2 {
			t.Errorf("header and page took %d writes, want 1", writes.Load()-1)
		}
		got := read(t, path)
		if want := append(append(page('w', 32), hdr...), pg...); !bytes.Equal(got, want) {
			t.Errorf("file = %q, want %q", got, want)
		}
		// The next frame continues the append: held again.
		write(t, f, hdr, int64(len(got)))
		if writes.Load() != 2 {
			t.Errorf("a second frame's header was written at once")
		}
	})
	t.Run("HeldToCommit", func(t *testing.T) {
		f, path := open(t)
		defer f.Close()
		write(t, f, page('w', 32), 0)
		want := page('w', 32)
		for range 3 {
			write(t, f, mid, int64(len(want)))
			write(t, f, pg, int64(len(want)+FrameHeader))
			want = append(append(want, mid...), pg...)
		}
		if got := read(t, path); writes.Load() != 1 || len(got) != 32 {
			t.Fatalf("after three frames that are not a commit: %d writes, %d bytes; want 1 write, 32 bytes (the frames held)", writes.Load(), len(got))
		}
		write(t, f, hdr, int64(len(want)))
		if writes.Load() != 1 {
			t.Fatalf("the commit frame's header was written before its page")
		}
		write(t, f, pg, int64(len(want)+FrameHeader))
		want = append(append(want, hdr...), pg...)
		if got := read(t, path); writes.Load() != 2 || !bytes.Equal(got, want) {
			t.Errorf("after the commit frame: %d writes of the frames, file %d bytes; want 1 write, %d bytes as written", writes.Load()-1, len(got), len(want))
		}
	})
	t.Run("Capped", func(t *testing.T) {
		f, path := open(t)
		defer f.Close()
		write(t, f, page('w', 32), 0)
		big := page('p', 4096)
		off, frames := int64(32), 0
		for writes.Load() == 1 {
			if off > 32+2*maxRun {
				t.Fatalf("%d frames without a commit, %d bytes, are all still held", frames, off-32)
			}
			write(t, f, mid, off)
			write(t, f, big, off+FrameHeader)
			off += FrameHeader + int64(len(big))
			frames++
		}
		if size := int64(len(read(t, path))); size != off || off-32 < maxRun || off-32 >= maxRun+FrameHeader+int64(len(big)) {
			t.Errorf("the held frames were written after %d frames, %d bytes, the file holding %d; want them written at %d bytes", frames, off-32, size, maxRun)
		}
	})
	for _, c := range []struct {
		name string
		call func(f vfs.File) error
	}{
		{"ReadAt", func(f vfs.File) error { _, err := f.ReadAt(make([]byte, 8), 32); return err }},
		{"Sync", func(f vfs.File) error { return f.Sync(vfs.SYNC_NORMAL) }},
		{"Size", func(f vfs.File) error {
			n, err := f.Size()
			if want := int64(32 + 2*FrameHeader + len(pg)); err == nil && n != want {
				err = fmt.Errorf("Size = %d, want %d", n, want)
			}
			return err
		}},
		{"Truncate", func(f vfs.File) error { return f.Truncate(32 + 2*FrameHeader + int64(len(pg))) }},
		{"SizeHint", func(f vfs.File) error { return f.(vfs.FileSizeHint).SizeHint(32 + 2*FrameHeader + int64(len(pg))) }},
		{"WriteElsewhere", func(f vfs.File) error { _, err := f.WriteAt(pg, 4096); return err }},
		{"Close", func(f vfs.File) error { return f.Close() }},
	} {
		t.Run("FlushedBy"+c.name, func(t *testing.T) {
			f, path := open(t)
			defer f.Close()
			// A frame that is not a commit, and the next frame's header.
			write(t, f, page('w', 32), 0)
			write(t, f, mid, 32)
			write(t, f, pg, 32+FrameHeader)
			write(t, f, mid, 32+FrameHeader+int64(len(pg)))
			if err := c.call(f); err != nil {
				t.Fatal(err)
			}
			got := read(t, path)
			want := append(append(append([]byte{}, mid...), pg...), mid...)
			if len(got) < 32+len(want) || !bytes.Equal(got[32:32+len(want)], want) {
				t.Errorf("after %s the file holds %q after the log header, want the held frames %q", c.name, got[32:min(len(got), 32+len(want))], want)
			}
		})
	}
	t.Run("NotAnAppend", func(t *testing.T) {
		f, path := open(t)
		defer f.Close()
		// A header rewritten after reading its frame (SQLite's checksum
		// rewrite) is written at once: nothing may follow it.
		appendFrame(t, f)
		f.WriteAt(pg, 32+FrameHeader)
		f.ReadAt(make([]byte, FrameHeader+len(pg)), 32)
		before := writes.Load()
		f.WriteAt(page('r', FrameHeader), 32)
		if writes.Load() != before+1 {
			t.Errorf("a header after a read took %d writes, want 1 at once", writes.Load()-before)
		}
		got, _ := os.ReadFile(path)
		if !bytes.Equal(got[32:32+FrameHeader], page('r', FrameHeader)) {
			t.Errorf("rewritten header not on disk")
		}
	})
	t.Run("Refused", func(t *testing.T) {
		f, _ := open(t)
		defer f.Close()
		appendFrame(t, f)
		fail.Store(true)
		defer fail.Store(false)
		if n, err := f.WriteAt(pg, 32+FrameHeader); n != 0 || !errors.Is(err, refused) {
			t.Errorf("a refused joined write = %d, %v; want 0, %v", n, err, refused)
		}
		// The next frame after a failed write does not continue an
		// append: written at once, and refused at once.
		if _, err := f.WriteAt(hdr, 32+FrameHeader+int64(len(pg))); !errors.Is(err, refused) {
			t.Errorf("header after a failed write = %v, want %v at once", err, refused)
		}
	})
}

// plainFile is a vfs.File over an os.File, without locks.
type plainFile struct{ *os.File }

func (f plainFile) Sync(vfs.SyncFlag) error { return f.File.Sync() }

func (f plainFile) Size() (int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

func (plainFile) Lock(vfs.LockLevel) error                        { return nil }
func (plainFile) Unlock(vfs.LockLevel) error                      { return nil }
func (plainFile) CheckReservedLock() (bool, error)                { return false, nil }
func (plainFile) SectorSize() int                                 { return 4096 }
func (plainFile) DeviceCharacteristics() vfs.DeviceCharacteristic { return 0 }
func (f plainFile) SizeHint(int64) error                          { return nil }

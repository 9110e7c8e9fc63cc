package vfswrap

import (
	"io"
	"sync"

	"github.com/ncruces/go-sqlite3/vfs"
)

// Option changes what New wraps.
type Option func(*wrapped)

// MemorySubjournals keeps each subjournal (the statement and savepoint
// journal of a write transaction) in memory up to limit bytes, and moves it
// to a temporary file of the wrapped VFS only past that.
//
// SQLite keeps a subjournal in memory for its first 64 KiB and then opens a
// temporary file for it. A write whose statement touches a few dozen pages
// (a record, its indexes and its full-text rows) passes 64 KiB, so without
// this each write transaction created, wrote, closed and deleted a file:
// system calls on the writer's path that cost more than the statement.
// A subjournal is rewritten from its start after each outermost savepoint or
// statement, so it holds at most what one of them changed: limit bounds the
// memory of a bulk statement, not of the everyday write.
func MemorySubjournals(limit int) Option {
	return func(w *wrapped) { w.subjournalLimit = limit }
}

// memJournal is a subjournal held in memory until it passes limit bytes,
// then in the temporary file spill opens.
type memJournal struct {
	buf   []byte
	limit int
	spill func() (vfs.File, error)
	file  vfs.File // set once spilled
}

var _ vfs.File = (*memJournal)(nil)

func (m *memJournal) ReadAt(p []byte, off int64) (int, error) {
	if m.file != nil {
		return m.file.ReadAt(p, off)
	}
	if off >= int64(len(m.buf)) {
		return 0, io.EOF
	}
	n := copy(p, m.buf[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (m *memJournal) WriteAt(p []byte, off int64) (int, error) {
	if m.file == nil && off+int64(len(p)) > int64(m.limit) {
		f, err := m.spill()
		if err != nil {
			return 0, err
		}
		if _, err := f.WriteAt(m.buf, 0); err != nil {
			f.Close()
			return 0, err
		}
		m.file, m.buf = f, nil
	}
	if m.file != nil {
		return m.file.WriteAt(p, off)
	}
	if end := int(off) + len(p); end > len(m.buf) {
		if m.buf == nil {
			m.buf = (*journalBuffers.Get().(*[]byte))[:0]
		}
		m.buf = append(m.buf, make([]byte, end-len(m.buf))...)
	}
	return copy(m.buf[off:], p), nil
}

// journalBuffers keeps the buffers of closed subjournals: the writer opens
// one per write transaction that passes SQLite's own 64 KiB.
var journalBuffers = sync.Pool{New: func() any {
	b := make([]byte, 0, 256<<10)
	return &b
}}

// keepBuffer is the largest buffer put back into journalBuffers: a bulk
// statement's is left to the garbage collector.
const keepBuffer = 1 << 20

func (m *memJournal) Truncate(size int64) error {
	if m.file != nil {
		return m.file.Truncate(size)
	}
	if size < int64(len(m.buf)) {
		m.buf = m.buf[:size]
		return nil
	}
	_, err := m.WriteAt(make([]byte, size-int64(len(m.buf))), int64(len(m.buf)))
	return err
}

func (m *memJournal) Size() (int64, error) {
	if m.file != nil {
		return m.file.Size()
	}
	return int64(len(m.buf)), nil
}

func (m *memJournal) Close() error {
	if m.buf != nil && cap(m.buf) <= keepBuffer {
		b := m.buf[:0]
		journalBuffers.Put(&b)
	}
	m.buf = nil
	if m.file != nil {
		return m.file.Close()
	}
	return nil
}

// A subjournal is never synced, locked or shared: it lives and dies with
// its connection's transaction.

func (m *memJournal) Sync(vfs.SyncFlag) error                         { return nil }
func (m *memJournal) Lock(vfs.LockLevel) error                        { return nil }
func (m *memJournal) Unlock(vfs.LockLevel) error                      { return nil }
func (m *memJournal) CheckReservedLock() (bool, error)                { return false, nil }
func (m *memJournal) SectorSize() int                                 { return 0 }
func (m *memJournal) DeviceCharacteristics() vfs.DeviceCharacteristic { return 0 }

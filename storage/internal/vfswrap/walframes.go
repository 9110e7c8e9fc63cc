package vfswrap

import (
	"github.com/ncruces/go-sqlite3/vfs"
)

// JoinFrames makes each frame SQLite appends to a write-ahead log one write
// of the wrapped file instead of two.
//
// SQLite writes a frame as its 24-byte header and then its page, each with
// a write of its own, so a commit of n pages makes 2n system calls; on a
// virtual machine a system call costs more than copying the page. With
// this option a frame header written where the previous write to the log
// ended is held back, and written together with the page when the page's
// write follows it directly, as it always does when SQLite appends a frame.
//
// A held header lives for one call at most: any other call on the log's
// file (a read, a write elsewhere, a sync, a size, a truncation, closing)
// writes it first. The one other writer of 24-byte headers, the checksum
// rewrite of a commit that overwrote its own frames, reads each frame just
// before it writes the header, so that header is never held: nothing is
// left held when a commit returns, and a process killed after a commit
// leaves the whole commit in the log.
func JoinFrames() Option {
	return func(w *wrapped) { w.joinFrames = true }
}

// frameHeader is the size of a WAL frame header (WAL_FRAME_HDRSIZE).
const frameHeader = 24

// walFile is a write-ahead log opened under JoinFrames.
type walFile struct {
	*file
	// end is where the last write ended, -1 after any other call: a
	// frame header is held only when it continues an append.
	end int64
	// held says hdr is waiting to be written at at.
	held bool
	hdr  [frameHeader]byte
	at   int64
	// buf joins a held header and its page.
	buf []byte
}

// settle writes a held header and forgets where the last write ended: what
// follows a call other than a write does not continue an append.
func (f *walFile) settle() error {
	f.end = -1
	return f.flush()
}

// flush writes a held header.
func (f *walFile) flush() error {
	if !f.held {
		return nil
	}
	f.held = false
	_, err := f.file.WriteAt(f.hdr[:], f.at)
	return err
}

func (f *walFile) WriteAt(p []byte, off int64) (int, error) {
	if f.held && off == f.at+frameHeader {
		f.held = false
		f.buf = append(append(f.buf[:0], f.hdr[:]...), p...)
		n, err := f.file.WriteAt(f.buf, f.at)
		f.wrote(off, len(p), err)
		return max(n-frameHeader, 0), err
	}
	if err := f.flush(); err != nil {
		f.end = -1
		return 0, err
	}
	if len(p) == frameHeader && off == f.end {
		copy(f.hdr[:], p)
		f.at, f.held = off, true
		return len(p), nil
	}
	n, err := f.file.WriteAt(p, off)
	f.wrote(off, len(p), err)
	return n, err
}

// wrote notes where a write of n bytes at off ended, or that it failed.
func (f *walFile) wrote(off int64, n int, err error) {
	f.end = -1
	if err == nil {
		f.end = off + int64(n)
	}
}

func (f *walFile) ReadAt(p []byte, off int64) (int, error) {
	if err := f.settle(); err != nil {
		return 0, err
	}
	return f.file.ReadAt(p, off)
}

func (f *walFile) Truncate(size int64) error {
	if err := f.settle(); err != nil {
		return err
	}
	return f.file.Truncate(size)
}

func (f *walFile) Sync(flags vfs.SyncFlag) error {
	if err := f.settle(); err != nil {
		return err
	}
	return f.file.Sync(flags)
}

func (f *walFile) Size() (int64, error) {
	if err := f.settle(); err != nil {
		return 0, err
	}
	return f.file.Size()
}

func (f *walFile) SizeHint(size int64) error {
	if err := f.settle(); err != nil {
		return err
	}
	return f.file.SizeHint(size)
}

func (f *walFile) Close() error {
	err := f.flush()
	if cerr := f.file.Close(); err == nil {
		err = cerr
	}
	return err
}

var _ vfs.FileSizeHint = (*walFile)(nil)

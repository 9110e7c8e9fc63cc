package vfswrap

import (
	"encoding/binary"

	"github.com/ncruces/go-sqlite3/vfs"
)

// JoinFrames makes the frames a commit appends to a write-ahead log one
// write of the wrapped file, instead of two writes a frame.
//
// SQLite writes a frame as its 24-byte header and then its page, each with
// a write of its own, so a commit of n pages makes 2n system calls; on a
// virtual machine a system call costs more than copying the page. With
// this option a frame header written where the previous write to the log
// ended starts a run of held frames, and each header and page that
// continues the run joins it. The run is written, in one write, when the
// page of a commit frame (its header names the database's size, the mark
// SQLite's recovery looks for) joins it, or once it holds maxRun bytes.
// SQLite writes every frame of a commit before it publishes any of them
// in the log's index, and the commit frame last, so when the write of the
// commit frame's page returns the whole commit is in the file, as without
// this option, and a failed write fails that commit.
//
// A held run lives only until another call on the log's file: a read, a
// write elsewhere, a sync, a size, a truncation or closing writes it
// first. The one other writer of 24-byte headers, the checksum rewrite of
// a commit that overwrote its own frames, reads each frame just before it
// writes the header, so that header is never held. Nothing is left held
// when a commit returns, and a process killed after a commit leaves the
// whole commit in the log.
func JoinFrames() Option {
	return func(w *wrapped) { w.joinFrames = true }
}

const (
	// FrameHeader is the size of a WAL frame header (WAL_FRAME_HDRSIZE),
	// before the frame's page.
	FrameHeader = 24
	// maxRun bounds a held run: a transaction larger than the page cache
	// spills frames long before its commit frame.
	maxRun = 1 << 20
)

// commitFrame reports whether hdr is the header of a commit frame: bytes 4
// to 8 hold the database's size in pages after the commit, zero in the
// header of any other frame.
func commitFrame(hdr []byte) bool {
	return binary.BigEndian.Uint32(hdr[4:8]) != 0
}

// walFile is a write-ahead log opened under JoinFrames.
type walFile struct {
	*file
	// end is where the last write ended, or the held run ends; -1 after
	// any other call: a run starts only where an append continues.
	end int64
	// run holds frames waiting to be written at at: whole frames, and
	// last perhaps a header waiting for its page.
	run []byte
	at  int64
	// commit says run's last header is a commit frame's.
	commit bool
}

// settle writes a held run and forgets where the last write ended: what
// follows a call other than a write does not continue an append.
func (f *walFile) settle() error {
	err := f.flush()
	f.end = -1
	return err
}

// flush writes a held run.
func (f *walFile) flush() error {
	if len(f.run) == 0 {
		return nil
	}
	_, err := f.file.WriteAt(f.run, f.at)
	f.wrote(f.at, len(f.run), err)
	f.run, f.commit = f.run[:0], false
	return err
}

func (f *walFile) WriteAt(p []byte, off int64) (int, error) {
	if len(f.run) > 0 && off == f.end {
		f.run = append(f.run, p...)
		f.end += int64(len(p))
		if len(p) == FrameHeader {
			f.commit = commitFrame(p)
			return len(p), nil
		}
		if f.commit || len(f.run) >= maxRun {
			if err := f.flush(); err != nil {
				return 0, err
			}
		}
		return len(p), nil
	}
	if err := f.flush(); err != nil {
		return 0, err
	}
	if len(p) == FrameHeader && off == f.end {
		f.run = append(f.run[:0], p...)
		f.at, f.end, f.commit = off, off+FrameHeader, commitFrame(p)
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

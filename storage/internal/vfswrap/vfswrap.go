// Package vfswrap wraps a SQLite VFS so that a hook sees the writes of its
// files: to turn their errors into the codes SQLite expects, or, in tests,
// to fail them as a full disk does. Two options change what reaches the
// wrapped VFS: MemorySubjournals keeps subjournals in memory, JoinFrames
// writes the frames of each commit to the WAL with one write. Everything
// else, the optional interfaces included (WAL mode needs the shared
// memory), passes through to the wrapped VFS unchanged.
package vfswrap

import (
	"github.com/ncruces/go-sqlite3/vfs"
)

// Op names a file operation the hook sees.
type Op string

// The operations that write or make room.
const (
	Write    Op = "write"
	Truncate Op = "truncate"
	Sync     Op = "sync"
	Allocate Op = "allocate"
)

// Hook is called around each operation of Op on a file: before it runs,
// with a nil error (a non-nil result fails the operation without running
// it), and after it fails, with its error (the result replaces the error).
type Hook func(op Op, name string, err error) error

// New returns base with hook around the writes of every file it opens.
func New(base vfs.VFSFilename, hook Hook, opts ...Option) vfs.VFSFilename {
	w := &wrapped{base: base, hook: hook}
	for _, o := range opts {
		o(w)
	}
	return w
}

type wrapped struct {
	base vfs.VFSFilename
	hook Hook
	// subjournalLimit, when positive, keeps subjournals in memory up to
	// that many bytes (MemorySubjournals).
	subjournalLimit int
	// joinFrames writes each commit's WAL frames with one write
	// (JoinFrames).
	joinFrames bool
}

func (w *wrapped) Open(name string, flags vfs.OpenFlag) (vfs.File, vfs.OpenFlag, error) {
	wal := flags&vfs.OPEN_WAL != 0
	f, flags, err := w.base.Open(name, flags)
	if err != nil {
		return nil, flags, err
	}
	return w.wrap(f, name, wal), flags, nil
}

// wrap returns f, opened as name, with the hook around its writes; a
// write-ahead log (wal) also joins its frames under JoinFrames.
func (w *wrapped) wrap(f vfs.File, name string, wal bool) vfs.File {
	wf := &file{File: f, name: name, hook: w.hook}
	if w.joinFrames && wal {
		return &walFile{file: wf, end: -1}
	}
	return wf
}

func (w *wrapped) OpenFilename(name *vfs.Filename, flags vfs.OpenFlag) (vfs.File, vfs.OpenFlag, error) {
	if name == nil && flags&vfs.OPEN_SUBJOURNAL != 0 && w.subjournalLimit > 0 {
		m := &memJournal{limit: w.subjournalLimit, spill: func() (vfs.File, error) {
			f, _, err := w.base.OpenFilename(nil, flags)
			return f, err
		}}
		return &file{File: m, hook: w.hook}, flags, nil
	}
	wal := flags&vfs.OPEN_WAL != 0
	f, flags, err := w.base.OpenFilename(name, flags)
	if err != nil {
		return nil, flags, err
	}
	return w.wrap(f, name.String(), wal), flags, nil
}

func (w *wrapped) Delete(name string, syncDir bool) error { return w.base.Delete(name, syncDir) }

func (w *wrapped) Access(name string, flags vfs.AccessFlag) (bool, error) {
	return w.base.Access(name, flags)
}

func (w *wrapped) FullPathname(name string) (string, error) { return w.base.FullPathname(name) }

// file is a file of the wrapped VFS.
type file struct {
	vfs.File
	name string
	hook Hook
}

// run runs one operation between the hook's two looks.
func (f *file) run(op Op, do func() error) error {
	if err := f.hook(op, f.name, nil); err != nil {
		return err
	}
	if err := do(); err != nil {
		return f.hook(op, f.name, err)
	}
	return nil
}

func (f *file) WriteAt(p []byte, off int64) (n int, err error) {
	err = f.run(Write, func() (err error) {
		n, err = f.File.WriteAt(p, off)
		return err
	})
	return n, err
}

func (f *file) Truncate(size int64) error {
	return f.run(Truncate, func() error { return f.File.Truncate(size) })
}

func (f *file) Sync(flags vfs.SyncFlag) error {
	return f.run(Sync, func() error { return f.File.Sync(flags) })
}

func (f *file) SizeHint(size int64) error {
	h, ok := f.File.(vfs.FileSizeHint)
	if !ok {
		return nil
	}
	return f.run(Allocate, func() error { return h.SizeHint(size) })
}

func (f *file) Unwrap() vfs.File { return f.File }

func (f *file) SharedMemory() vfs.SharedMemory {
	if s, ok := f.File.(vfs.FileSharedMemory); ok {
		return s.SharedMemory()
	}
	return nil
}

func (f *file) MemoryMapper() vfs.MemoryMapper {
	if m, ok := f.File.(vfs.FileMemoryMapper); ok {
		return m.MemoryMapper()
	}
	return nil
}

func (f *file) LockState() vfs.LockLevel {
	if l, ok := f.File.(vfs.FileLockState); ok {
		return l.LockState()
	}
	return vfs.LOCK_NONE
}

func (f *file) PersistWAL() bool {
	if p, ok := f.File.(vfs.FilePersistWAL); ok {
		return p.PersistWAL()
	}
	return false
}

func (f *file) SetPersistWAL(keep bool) {
	if p, ok := f.File.(vfs.FilePersistWAL); ok {
		p.SetPersistWAL(keep)
	}
}

func (f *file) PowersafeOverwrite() bool {
	if p, ok := f.File.(vfs.FilePowersafeOverwrite); ok {
		return p.PowersafeOverwrite()
	}
	return false
}

func (f *file) SetPowersafeOverwrite(psow bool) {
	if p, ok := f.File.(vfs.FilePowersafeOverwrite); ok {
		p.SetPowersafeOverwrite(psow)
	}
}

func (f *file) HasMoved() (bool, error) {
	if h, ok := f.File.(vfs.FileHasMoved); ok {
		return h.HasMoved()
	}
	return false, nil
}

// The batch atomic writes of F2FS pass through: the file's device
// characteristics, which announce them, come from the wrapped file.

func (f *file) BeginAtomicWrite() error {
	if b, ok := f.File.(vfs.FileBatchAtomicWrite); ok {
		return b.BeginAtomicWrite()
	}
	return nil
}

func (f *file) CommitAtomicWrite() error {
	if b, ok := f.File.(vfs.FileBatchAtomicWrite); ok {
		return f.run(Write, b.CommitAtomicWrite)
	}
	return nil
}

func (f *file) RollbackAtomicWrite() error {
	if b, ok := f.File.(vfs.FileBatchAtomicWrite); ok {
		return b.RollbackAtomicWrite()
	}
	return nil
}

var (
	_ vfs.FileBatchAtomicWrite   = (*file)(nil)
	_ vfs.VFSFilename            = (*wrapped)(nil)
	_ vfs.FileUnwrap             = (*file)(nil)
	_ vfs.FileSizeHint           = (*file)(nil)
	_ vfs.FileSharedMemory       = (*file)(nil)
	_ vfs.FileMemoryMapper       = (*file)(nil)
	_ vfs.FileLockState          = (*file)(nil)
	_ vfs.FilePersistWAL         = (*file)(nil)
	_ vfs.FilePowersafeOverwrite = (*file)(nil)
	_ vfs.FileHasMoved           = (*file)(nil)
)

package engine

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hearth-memory/hearth/storage/internal/errs"
	"github.com/ncruces/go-sqlite3"
)

// A full disk (issue #21). SQLite answers a write that finds no space with
// SQLITE_FULL and rolls back the transaction: nothing half-written reaches
// the file, and reads go on. The store turns that answer into a Full error
// that says so, counts the writes refused in memory (the audit cannot be
// written while the disk is full) and, once a write succeeds again, writes
// one audit row with the count. Nothing retries on its own but the usage
// flusher, which backs off (fullRetryMin doubling to fullRetryMax) and
// whose attempt is the probe that notices space coming back when no client
// writes.

// Backoff of the usage flusher while the disk is full.
const (
	fullRetryMin = time.Second
	fullRetryMax = time.Minute
)

// OpRecovered names the write that records a full-disk episode in the
// audit: it is the probe, not a refusal to count.
const OpRecovered = "disk full recovered"

// diskFull reports whether err means the disk is full: SQLITE_FULL, or an
// I/O error whose system error is ENOSPC (the WAL or the shared memory
// failing to grow). It goes by the driver's codes, never by a message.
func diskFull(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, sqlite3.FULL) {
		return true
	}
	return errors.Is(err, sqlite3.IOERR) && errors.Is(err, syscall.ENOSPC)
}

// fullState is the current full-disk episode: when writes began to fail,
// the last failure, and the writes refused, by operation.
type fullState struct {
	mu      sync.Mutex
	since   time.Time // zero while the disk is not known to be full
	last    time.Time
	refused map[string]int
	// wake tells the flusher a write succeeded while the disk was full:
	// space is back, and the episode's audit row can be written now.
	wake chan struct{}
	// retryMin and retryMax are fullRetryMin and fullRetryMax but in tests.
	retryMin, retryMax time.Duration
	// tries counts the flusher's rounds that found the disk full.
	tries atomic.Int64
}

func newFullState(retryMin, retryMax time.Duration) *fullState {
	if retryMin == 0 {
		retryMin, retryMax = fullRetryMin, fullRetryMax
	}
	return &fullState{refused: map[string]int{}, wake: make(chan struct{}, 1),
		retryMin: retryMin, retryMax: retryMax}
}

// on reports whether the disk is known to be full.
func (f *fullState) on() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return !f.since.IsZero()
}

// note counts one write refused for a full disk at now.
func (f *fullState) note(op string, now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.since.IsZero() {
		f.since = now
	}
	f.last = now
	if op != OpRecovered {
		f.refused[op]++
	}
}

// wakeUp asks the flusher to record the episode now.
func (f *fullState) wakeUp() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// DiskFull is the current full-disk episode, as status reports it.
type DiskFull struct {
	// Since is the first refusal and Last the latest.
	Since, Last time.Time
	// Refused counts the writes refused so far.
	Refused int
}

// DiskFull returns the current episode; ok is false while the disk is not
// known to be full.
func (e *Engine) DiskFull() (d DiskFull, ok bool) {
	f := e.full
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.since.IsZero() {
		return DiskFull{}, false
	}
	n := 0
	for _, c := range f.refused {
		n += c
	}
	return DiskFull{Since: f.since, Last: f.last, Refused: n}, true
}

// fullError is the error a write refused for a full disk returns.
func (e *Engine) fullError() *errs.Error {
	dir := filepath.Dir(e.path)
	free := "free space unknown"
	if s := diskSpace(dir); s.Known {
		free = FormatBytes(s.Free) + " free"
	}
	return &errs.Error{Code: errs.Full, Message: fmt.Sprintf(
		"the disk holding %s is full (%s): nothing was written; reads still work, and writes resume once space is freed there", dir, free)}
}

// writeError is what a caller of write gets for err: a full disk becomes
// the Full error (and is counted), an *errs.Error stays as it is, anything else
// is left to the caller's own wrapping. A write that met a damaged page
// has the file checked at once (suspect).
func (e *Engine) writeError(op string, err error) error {
	if err == nil {
		return nil
	}
	var coded *errs.Error
	if errors.As(err, &coded) {
		return err
	}
	if corrupt(err) {
		e.suspect()
	}
	if !diskFull(err) {
		return err
	}
	e.full.note(op, e.cfg.Now())
	return e.fullError()
}

// FullEpisode returns the current full-disk episode's refusals, by
// operation, and when it began and last refused; ok is false while the
// disk is not known to be full.
func (e *Engine) FullEpisode() (counts map[string]int, since, last time.Time, ok bool) {
	f := e.full
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.since.IsZero() {
		return nil, time.Time{}, time.Time{}, false
	}
	counts = make(map[string]int, len(f.refused))
	for op, n := range f.refused {
		counts[op] = n
	}
	return counts, f.since, f.last, true
}

// FullRecorded ends what FullEpisode returned, once its audit row is
// written: refusals counted meanwhile belong to the next row, whose
// episode starts at last; none means the episode is over.
func (e *Engine) FullRecorded(counts map[string]int, last time.Time) {
	f := e.full
	f.mu.Lock()
	defer f.mu.Unlock()
	left := 0
	for op, n := range counts {
		f.refused[op] -= n
		if f.refused[op] <= 0 {
			delete(f.refused, op)
		}
	}
	for _, n := range f.refused {
		left += n
	}
	if left == 0 {
		f.since, f.last = time.Time{}, time.Time{}
	} else {
		f.since = last
	}
}

// FullWake receives when a write succeeds while the disk is known to be
// full: space is back, and the episode's audit row can be written now.
func (e *Engine) FullWake() <-chan struct{} { return e.full.wake }

// FullRetry counts one more round that found the disk full and returns
// how long to wait before the next, doubling from fullRetryMin up to
// fullRetryMax after backoff.
func (e *Engine) FullRetry(backoff time.Duration) time.Duration {
	e.full.tries.Add(1)
	return min(max(2*backoff, e.full.retryMin), e.full.retryMax)
}

// FullTries counts the rounds FullRetry was asked for.
func (e *Engine) FullTries() int64 { return e.full.tries.Load() }

// DiskSpace is the space of the file system that holds the database.
type DiskSpace struct {
	// Free is what an unprivileged writer may still use; Total the file
	// system's size. Both are bytes.
	Free, Total uint64
	// Known is false where the platform cannot tell.
	Known bool
}

// DiskSpace returns the space of the file system holding the database and
// its WAL.
func (e *Engine) DiskSpace() DiskSpace { return diskSpace(filepath.Dir(e.path)) }

// FormatBytes writes n in binary units, e.g. 512 B, 3.2 MiB, 41.0 GiB.
func FormatBytes(n uint64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := uint64(unit), 0
	for m := n / unit; m >= unit && exp < 5; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

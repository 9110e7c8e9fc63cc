package engine

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hearth-memory/hearth/storage/internal/vfswrap"
	"github.com/ncruces/go-sqlite3"
)

// The WAL's size (issue #21). A PASSIVE checkpoint (checkpointLoop's, every
// walAutoPages pages) copies pages back; SQLite starts the WAL over only
// when a transaction begins with every frame copied and no reader on one.
// Commits arriving during the copy would keep it from ever doing so, so
// the writer loop copies what came meanwhile between two groups (catchUp),
// and journal_size_limit trims a file grown past WALLimit.
//
// A reader of an older snapshot also keeps the WAL from starting over, so
// the writer loop checks the WAL's frames at most every walCheckEvery and,
// past WALLimit, runs a TRUNCATE checkpoint (checkpoint): new reads wait
// and writes wait meanwhile, at most walBusy plus the copy. One that cannot
// finish (a long read, a full disk) is tried again after walRetry. The
// figures behind this are in docs/measurements.md.
const (
	WALLimit      = 16 << 20
	walCheckEvery = time.Second
	walBusy       = time.Second
	walRetry      = 30 * time.Second
)

// walAutoPages is how many pages a commit may leave in the WAL before the
// checkpointer copies them back. SQLite's own automatic checkpoint would
// stop the single writer for the copy and its two fsyncs; the writer's WAL
// hook (initWriter) only wakes checkpointLoop, which runs a PASSIVE
// checkpoint on a connection of its own (docs/measurements.md).
const walAutoPages = 1000

// checkpointer is the background checkpoint: its connection, the wake-up
// the writer's WAL hook sends, and the lock that keeps it apart from the
// writer loop's TRUNCATE checkpoint (SQLite runs one checkpoint at a time
// and answers a second with SQLITE_BUSY).
type checkpointer struct {
	pool *sql.DB
	wake chan struct{} // buffered: the hook never waits
	stop chan struct{}
	done chan struct{} // nil until checkpointLoop runs
	mu   sync.Mutex
	// found is the WAL's frames when the last background checkpoint ran.
	found atomic.Int64
	// copied is set when a background checkpoint has finished and the
	// writer loop has not yet caught up with it (catchUp).
	copied atomic.Bool
	// frames is the WAL's frames after the writer's last commit, and
	// frameSize the bytes a frame takes: its header and a page.
	frames, frameSize atomic.Int64
	// restarts counts the commits that found the WAL started over.
	restarts atomic.Int64
}

// initWriter prepares the writer's connection: as any connection, with
// the WAL trimmed to the policy's limit when it starts over, and with the
// WAL hook that leaves checkpoints to checkpointLoop (setting a hook turns
// SQLite's automatic checkpoint off) and counts the WAL's frames.
func (e *Engine) initWriter(c *sqlite3.Conn) error {
	if err := e.cfg.schemaFuncs(c); err != nil {
		return err
	}
	if err := c.Exec(fmt.Sprintf(`PRAGMA journal_size_limit = %d`, e.wal.limit)); err != nil {
		return err
	}
	stmt, _, err := c.Prepare(`PRAGMA page_size`)
	if err != nil {
		return err
	}
	defer stmt.Close()
	if !stmt.Step() {
		return fmt.Errorf("page_size: %w", stmt.Err())
	}
	e.ckpt.frameSize.Store(vfswrap.FrameHeader + stmt.ColumnInt64(0))
	c.WALHook(func(_ *sqlite3.Conn, _ string, pages int) error {
		if int64(pages) < e.ckpt.frames.Swap(int64(pages)) {
			e.ckpt.restarts.Add(1)
		}
		if checkpointDue(pages, int(e.ckpt.found.Load())) {
			select {
			case e.ckpt.wake <- struct{}{}:
			default:
			}
		}
		return nil
	})
	return nil
}

// checkpointDue says whether a commit that left pages frames in the WAL
// calls for a checkpoint, the last having found found frames there: once
// walAutoPages frames came since. Under steady writes the writer seldom
// finds the WAL wholly copied back as it begins a transaction, so SQLite
// does not start the WAL over and pages keeps growing past walAutoPages:
// counting from zero would wake a checkpoint, with its two fsyncs, after
// every commit. A WAL smaller than found has started over.
func checkpointDue(pages, found int) bool {
	if pages < found {
		found = 0
	}
	return pages-found >= walAutoPages
}

// checkpointLoop runs a PASSIVE checkpoint each time the writer's WAL hook
// wakes it, until Close. A damaged file is left alone, as afterWrite does;
// a checkpoint that fails (a full disk) leaves the pages in the WAL for the
// next one.
func (e *Engine) checkpointLoop() {
	defer close(e.ckpt.done)
	for {
		select {
		case <-e.ckpt.wake:
		case <-e.ckpt.stop:
			return
		}
		if e.damaged.Load() != nil {
			continue
		}
		e.ckpt.mu.Lock()
		frames, err := passiveCheckpoint(e.ckpt.pool)
		e.ckpt.mu.Unlock()
		if err == nil {
			e.ckpt.found.Store(int64(frames))
			e.ckpt.copied.Store(true)
		}
		e.wal.mu.Lock()
		e.wal.stats.Passive++
		if err != nil {
			e.wal.stats.PassiveFailed++
		}
		e.wal.mu.Unlock()
	}
}

// passiveCheckpoint runs a PASSIVE checkpoint on pool's connection and
// returns the frames the WAL held.
func passiveCheckpoint(pool *sql.DB) (frames int, err error) {
	var busy, copied int
	err = pool.QueryRowContext(context.Background(), `PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &frames, &copied)
	return frames, err
}

// walPolicy is the writer loop's checkpoint state and its figures.
type walPolicy struct {
	// limit and every are WALLimit and walCheckEvery but in tests.
	limit int64
	every time.Duration
	next  time.Time // the loop's alone: when it may look at the WAL again

	mu    sync.Mutex
	stats CheckpointStats
}

// CheckpointStats are the figures of the checkpoint policy since open.
type CheckpointStats struct {
	// WALBytes is the size of the WAL's frames when the loop last looked
	// (the file may be larger: a WAL that starts over keeps its blocks).
	WALBytes int64
	// Count is how many checkpoints ran; Unfinished how many of them could
	// not truncate the WAL (readers held on, or an error).
	Count, Unfinished int
	// Last, Max and Total are their durations; LastAt when the last ran.
	Last, Max, Total time.Duration
	LastAt           time.Time
	// Passive is how many background checkpoints ran (checkpointLoop),
	// PassiveFailed how many of them failed.
	Passive, PassiveFailed int
	// CaughtUp is how many times the writer loop copied what came while
	// a background checkpoint ran (catchUp), CatchUpFailed how many of
	// those failed; Restarts how many commits found the WAL started over.
	CaughtUp, CatchUpFailed int
	Restarts                int64
}

// CheckpointStats returns the checkpoint policy's figures.
func (e *Engine) CheckpointStats() CheckpointStats {
	e.wal.mu.Lock()
	defer e.wal.mu.Unlock()
	st := e.wal.stats
	st.Restarts = e.ckpt.restarts.Load()
	return st
}

// afterWrite runs in the writer loop after each group: it applies the WAL
// policy. A damaged file is left alone: nothing is committed to it, and a
// checkpoint would write into it.
func (e *Engine) afterWrite() {
	if e.damaged.Load() != nil {
		return
	}
	e.catchUp()
	now := time.Now()
	if now.Before(e.wal.next) {
		return
	}
	e.wal.next = now.Add(e.wal.every)
	size := e.ckpt.frames.Load() * e.ckpt.frameSize.Load()
	e.wal.mu.Lock()
	e.wal.stats.WALBytes = size
	e.wal.mu.Unlock()
	if size < e.wal.limit {
		return
	}
	start := time.Now()
	busy, err := e.checkpoint()
	took := time.Since(start)
	unfinished := err != nil || busy
	if unfinished {
		e.wal.next = time.Now().Add(walRetry)
	} else {
		size = 0
		e.ckpt.frames.Store(0)
	}
	e.wal.mu.Lock()
	defer e.wal.mu.Unlock()
	s := &e.wal.stats
	s.WALBytes = size
	s.Count++
	if unfinished {
		s.Unfinished++
	}
	s.Last, s.LastAt = took, start
	s.Max = max(s.Max, took)
	s.Total += took
}

// catchUp runs, once a background checkpoint has finished, a PASSIVE
// checkpoint of its own on the writer's connection between two groups:
// it copies the frames committed while the background one ran, and as no
// commit can come meanwhile, it copies every frame no reader still needs.
// The next group then finds the WAL wholly copied and starts it over. The
// copy is a few commits' pages; the background checkpoint did the rest.
// It never waits: while a background checkpoint runs, the next group's
// end tries again.
func (e *Engine) catchUp() {
	if !e.ckpt.copied.Load() || !e.ckpt.mu.TryLock() {
		return
	}
	defer e.ckpt.mu.Unlock()
	e.ckpt.copied.Store(false)
	_, err := passiveCheckpoint(e.writer)
	e.wal.mu.Lock()
	defer e.wal.mu.Unlock()
	e.wal.stats.CaughtUp++
	if err != nil {
		e.wal.stats.CatchUpFailed++
	}
}

// checkpoint holds new reads back until the reads in progress have
// finished (readGate), at most walBusy, then runs a TRUNCATE checkpoint on
// the writer's connection, and reports whether it could not finish.
//
// Without the gate it rarely could under steady searches: SQLite waits for
// one reader of an older snapshot at most and then gives up, and with
// several clients searching there nearly always is a second
// (docs/measurements.md). Reads wait for it, as writes do.
func (e *Engine) checkpoint() (busy bool, err error) {
	// A background checkpoint in progress finishes first.
	e.ckpt.mu.Lock()
	defer e.ckpt.mu.Unlock()
	release, drained := e.readers.hold(walBusy)
	defer release()
	if !drained {
		return true, nil // a long read (an integrity check) holds on
	}
	ctx := context.Background()
	conn, err := e.writer.Conn(ctx)
	if err != nil {
		return false, err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, fmt.Sprintf(`PRAGMA busy_timeout = %d`, walBusy.Milliseconds())); err != nil {
		return false, err
	}
	// The writer's own busy timeout comes back whatever happens.
	defer conn.ExecContext(ctx, `PRAGMA `+writerPragmas[0])
	var b, frames, copied int
	if err := conn.QueryRowContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&b, &frames, &copied); err != nil {
		return false, err
	}
	return b != 0, nil
}

// readGate counts the read transactions in progress and can hold new
// ones back while a checkpoint waits for those to finish.
type readGate struct {
	mu      sync.Mutex
	active  int
	held    chan struct{} // non-nil while held: new reads wait for it to close
	drained chan struct{} // closed when active drops to zero while held
}

// enter admits a read, waiting while the gate is held.
func (g *readGate) enter(ctx context.Context) error {
	for {
		g.mu.Lock()
		if g.held == nil {
			g.active++
			g.mu.Unlock()
			return nil
		}
		held := g.held
		g.mu.Unlock()
		select {
		case <-held:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// leave ends a read.
func (g *readGate) leave() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.active--
	if g.active == 0 && g.drained != nil {
		close(g.drained)
		g.drained = nil
	}
}

// hold stops new reads and waits until none is in progress, at most
// timeout; drained says whether none is. release lets reads in again.
func (g *readGate) hold(timeout time.Duration) (release func(), drained bool) {
	g.mu.Lock()
	g.held = make(chan struct{})
	var wait chan struct{}
	if g.active > 0 {
		g.drained = make(chan struct{})
		wait = g.drained
	}
	g.mu.Unlock()
	release = func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		close(g.held)
		g.held, g.drained = nil, nil
	}
	if wait == nil {
		return release, true
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-wait:
		return release, true
	case <-t.C:
		return release, false
	}
}

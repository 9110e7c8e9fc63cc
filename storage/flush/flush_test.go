package flush_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hearth-memory/hearth/storage/flush"
)

// Most tests run in a synctest bubble: its clock moves only when every
// goroutine of the bubble waits, so "not before Delay" and "at once" are
// exact, and synctest.Wait lets every goroutine the buffer started finish.

// store is what a Policy writes to: the batches written, in order, and
// the error the next writes return (nil: they succeed).
type store struct {
	mu      sync.Mutex
	batches [][]int
	fail    error
	tries   int
}

func (s *store) write(_ context.Context, batch []int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tries++
	if s.fail != nil {
		return s.fail
	}
	s.batches = append(s.batches, slices.Clone(batch))
	return nil
}

func (s *store) failWith(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail = err
}

func (s *store) written() [][]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.batches)
}

func (s *store) attempts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tries
}

// list is a Policy over batches of ints written to s.
func list(s *store) flush.Policy[[]int] {
	return flush.Policy[[]int]{New: func() []int { return nil }, Write: s.write}
}

// add appends v and reports whether the buffer took it.
func add(b *flush.Buffer[[]int], v int) bool {
	return b.Add(func(batch *[]int) int { *batch = append(*batch, v); return len(*batch) })
}

func wantWritten(t *testing.T, s *store, want ...[]int) {
	t.Helper()
	got := s.written()
	if len(got) != len(want) {
		t.Fatalf("written %v, want %v", got, want)
	}
	for i := range want {
		if !slices.Equal(got[i], want[i]) {
			t.Fatalf("written %v, want %v", got, want)
		}
	}
}

var errFull = errors.New("disk full")

func TestBuffer_Size(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		s := &store{}
		p := list(s)
		p.Size = 3
		b := flush.New(p)
		add(b, 1)
		add(b, 2)
		synctest.Wait()
		wantWritten(t, s) // two wait: no flush is due
		add(b, 3)
		synctest.Wait() // the flush Size asked for has run
		wantWritten(t, s, []int{1, 2, 3})
	})
}

func TestBuffer_Delay(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		s := &store{}
		p := list(s)
		p.Delay = func([]int) time.Duration { return time.Second }
		b := flush.New(p)
		add(b, 1)
		time.Sleep(time.Second / 2)
		add(b, 2) // the delay runs from the batch's first entry
		time.Sleep(time.Second/2 - time.Nanosecond)
		synctest.Wait()
		wantWritten(t, s)
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		wantWritten(t, s, []int{1, 2})

		add(b, 3) // a new batch: a new delay
		time.Sleep(time.Second)
		synctest.Wait()
		wantWritten(t, s, []int{1, 2}, []int{3})
	})
}

func TestBuffer_Max(t *testing.T) {
	t.Parallel()
	s := &store{}
	p := list(s)
	p.Max = 2
	b := flush.New(p)
	if !add(b, 1) || !add(b, 2) {
		t.Fatal("refused below Max")
	}
	if add(b, 3) {
		t.Fatal("took an entry beyond Max")
	}
	if err := b.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if !add(b, 4) {
		t.Fatal("refused after the flush")
	}
	if err := b.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	wantWritten(t, s, []int{1, 2}, []int{4})
}

func TestBuffer_Close(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		s := &store{}
		p := list(s)
		p.Delay = func([]int) time.Duration { return time.Second }
		b := flush.New(p)
		add(b, 1)
		add(b, 2)
		if err := b.Close(t.Context()); err != nil {
			t.Fatal(err)
		}
		wantWritten(t, s, []int{1, 2})
		if add(b, 3) {
			t.Error("took an entry after Close")
		}
		time.Sleep(time.Hour) // the stopped timer writes nothing
		synctest.Wait()
		if err := b.Close(t.Context()); err != nil {
			t.Fatal(err)
		}
		wantWritten(t, s, []int{1, 2})
		if n := s.attempts(); n != 1 {
			t.Errorf("%d writes, want 1", n)
		}
	})
}

// counts is a batch that merges: how many times each key was added.
type counts = map[string]int

func TestBuffer_Requeue(t *testing.T) {
	t.Parallel()
	var (
		mu      sync.Mutex
		fail    = true
		written []counts
	)
	b := flush.New(flush.Policy[counts]{
		New: func() counts { return counts{} },
		Write: func(_ context.Context, c counts) error {
			mu.Lock()
			defer mu.Unlock()
			if fail {
				return errFull
			}
			written = append(written, c)
			return nil
		},
		Requeue: func(waiting *counts, failed counts) int {
			for k, n := range failed {
				(*waiting)[k] += n
			}
			return len(*waiting)
		},
	})
	count := func(k string) { b.Add(func(c *counts) int { (*c)[k]++; return len(*c) }) }
	count("a")
	count("b")
	if err := b.Flush(t.Context()); !errors.Is(err, errFull) {
		t.Fatalf("Flush = %v, want the write's error", err)
	}
	var back counts
	b.Peek(func(c counts) { back = maps(c) })
	if back["a"] != 1 || back["b"] != 1 || len(back) != 2 {
		t.Fatalf("after a failed write %v wait, want a:1 b:1", back)
	}
	count("a")
	mu.Lock()
	fail = false
	mu.Unlock()
	if err := b.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if len(written) != 1 || written[0]["a"] != 2 || written[0]["b"] != 1 || len(written[0]) != 2 {
		t.Fatalf("written %v, want one batch a:2 b:1 (each entry once)", written)
	}
}

func maps(c counts) counts {
	out := counts{}
	for k, n := range c {
		out[k] = n
	}
	return out
}

func TestBuffer_Lost(t *testing.T) {
	t.Parallel()
	s := &store{}
	p := list(s)
	var lost []int
	var lostN int
	p.Lost = func(batch []int, n int, err error) {
		if !errors.Is(err, errFull) {
			t.Errorf("Lost told %v, want the write's error", err)
		}
		lost, lostN = batch, n
	}
	b := flush.New(p)
	add(b, 1)
	add(b, 2)
	s.failWith(errFull)
	if err := b.Flush(t.Context()); !errors.Is(err, errFull) {
		t.Fatalf("Flush = %v, want the write's error", err)
	}
	if !slices.Equal(lost, []int{1, 2}) || lostN != 2 {
		t.Fatalf("Lost told %v (%d), want [1 2] (2)", lost, lostN)
	}
	s.failWith(nil)
	add(b, 3)
	if err := b.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	wantWritten(t, s, []int{3}) // the lost batch is not written again
}

// minute is a batch of one minute of a clock.
type minute struct {
	start time.Time
	vals  []int
}

// minutes is a Policy like the server's refusals: a batch spans a minute,
// is due a second after it by Delay, and writes to s.
func minutes(s *store, delays *atomic.Int64) flush.Policy[minute] {
	return flush.Policy[minute]{
		New:   func() minute { return minute{} },
		Write: func(ctx context.Context, m minute) error { return s.write(ctx, m.vals) },
		Delay: func(m minute) time.Duration {
			delays.Add(1)
			return max(time.Until(m.start.Add(time.Minute))+time.Second, time.Second)
		},
		Ended: func(m minute) bool {
			return !m.start.IsZero() && !m.start.Equal(time.Now().Truncate(time.Minute))
		},
	}
}

func addAt(b *flush.Buffer[minute], v int) {
	b.Add(func(m *minute) int {
		if m.start.IsZero() {
			m.start = time.Now().Truncate(time.Minute)
		}
		m.vals = append(m.vals, v)
		return len(m.vals)
	})
}

func TestBuffer_Ended(t *testing.T) {
	t.Parallel()
	t.Run("OKAddWritesTheEndedBatch", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			s := &store{}
			var delays atomic.Int64
			p := minutes(s, &delays)
			p.Delay = nil // only Add ends a batch here
			b := flush.New(p)
			addAt(b, 1)
			addAt(b, 2)
			time.Sleep(time.Minute)
			addAt(b, 3) // the next minute: the caller writes the last one first
			wantWritten(t, s, []int{1, 2})
			if err := b.Close(t.Context()); err != nil {
				t.Fatal(err)
			}
			wantWritten(t, s, []int{1, 2}, []int{3})
		})
	})
	t.Run("OKDelayWaitsForTheEnd", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			s := &store{}
			var delays atomic.Int64
			b := flush.New(minutes(s, &delays))
			time.Sleep(10 * time.Second)
			addAt(b, 1) // due 51 s on, a second after the minute
			time.Sleep(51*time.Second - time.Nanosecond)
			synctest.Wait()
			wantWritten(t, s)
			time.Sleep(time.Nanosecond)
			synctest.Wait()
			wantWritten(t, s, []int{1})
		})
	})
	t.Run("OKDelayAgainWhileTheSpanLasts", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			s := &store{}
			var delays atomic.Int64
			p := minutes(s, &delays)
			// The span ends when the test says, not with the clock: until
			// then each Delay finds the batch going on and waits again.
			var over atomic.Bool
			p.Ended = func(m minute) bool { return !m.start.IsZero() && over.Load() }
			b := flush.New(p)
			addAt(b, 1)
			time.Sleep(5 * time.Minute)
			synctest.Wait()
			wantWritten(t, s)
			if n := delays.Load(); n < 5 {
				t.Errorf("Delay asked %d times in five minutes, want the timer to wait again each time", n)
			}
			over.Store(true)
			time.Sleep(2 * time.Minute)
			synctest.Wait()
			wantWritten(t, s, []int{1})
		})
	})
}

// TestBuffer_Hold checks that a read of the store and of Peek under one
// Hold finds every entry added before it, none in flight: a flush waits
// for the read, and the read for a flush under way. It runs real
// goroutines (no bubble: a mutex does not count as waiting in one).
func TestBuffer_Hold(t *testing.T) {
	t.Parallel()
	var stored, added, writes atomic.Int64
	b := flush.New(flush.Policy[[]int]{
		New: func() []int { return nil },
		Write: func(_ context.Context, batch []int) error {
			time.Sleep(50 * time.Microsecond) // a write takes a while: the in-flight window is wide
			stored.Add(int64(len(batch)))
			writes.Add(1)
			return nil
		},
	})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // adds
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			add(b, i)
			added.Add(1)
		}
	}()
	go func() { // flushes
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			_ = b.Flush(context.Background())
		}
	}()
	// Check until many batches have been written, each while entries were
	// added and read.
	for checks := 0; writes.Load() < 200 || checks < 2000; checks++ {
		before := added.Load()
		release := b.Hold()
		var waiting int
		b.Peek(func(batch []int) { waiting = len(batch) })
		got := stored.Load() + int64(waiting)
		release()
		if got < before {
			close(stop)
			wg.Wait()
			t.Fatalf("under Hold, %d stored and waiting, but %d were added before: a batch was in flight", got, before)
		}
	}
	close(stop)
	wg.Wait()
}

// loop is a Policy with a loop over batches of ints written to s: a round
// every hour, a Size of 2, and a backoff doubling from a second while s
// fails with errFull.
func loop(s *store) flush.Policy[[]int] {
	p := list(s)
	p.Size = 2
	p.Every = time.Hour
	p.Backoff = func(prev time.Duration, err error) time.Duration {
		if errors.Is(err, errFull) {
			return max(2*prev, time.Second)
		}
		return 0
	}
	p.Requeue = func(waiting *[]int, failed []int) int {
		*waiting = append(failed, *waiting...)
		return len(*waiting)
	}
	return p
}

func TestBuffer_Loop(t *testing.T) {
	t.Parallel()
	t.Run("OKEveryAndSize", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			s := &store{}
			b := flush.New(loop(s))
			b.Start()
			defer b.Close(context.Background())
			add(b, 1)
			time.Sleep(time.Hour - time.Nanosecond)
			synctest.Wait()
			wantWritten(t, s)
			time.Sleep(time.Nanosecond)
			synctest.Wait()
			wantWritten(t, s, []int{1}) // a round each Every
			add(b, 2)
			add(b, 3) // Size: a round at once
			synctest.Wait()
			wantWritten(t, s, []int{1}, []int{2, 3})
		})
	})
	t.Run("OKBacksOff", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			s := &store{}
			p := loop(s)
			var rounds atomic.Int64
			p.Before = func(context.Context) error { rounds.Add(1); return nil }
			wake := make(chan struct{})
			p.Wake = func() <-chan struct{} { return wake }
			b := flush.New(p)
			b.Start()
			defer b.Close(context.Background())
			s.failWith(errFull)
			add(b, 1)
			add(b, 2) // a round at once; it fails: back off 1 s
			synctest.Wait()
			if n := s.attempts(); n != 1 {
				t.Fatalf("%d tries, want 1", n)
			}
			add(b, 3)
			add(b, 4) // Size again, while backing off: no round before the backoff's
			synctest.Wait()
			if n := s.attempts(); n != 1 {
				t.Fatalf("%d tries while backing off, want 1", n)
			}
			// Tries at 1 s, then 2 s and 4 s later: the backoff doubles.
			for _, wait := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second} {
				before := s.attempts()
				time.Sleep(wait - time.Nanosecond)
				synctest.Wait()
				if s.attempts() != before {
					t.Fatalf("a try before the backoff of %v was over", wait)
				}
				time.Sleep(time.Nanosecond)
				synctest.Wait()
				if s.attempts() != before+1 {
					t.Fatalf("no try once the backoff of %v was over", wait)
				}
			}
			// Wake runs a round at once, backing off or not; it succeeds.
			s.failWith(nil)
			wake <- struct{}{}
			synctest.Wait()
			wantWritten(t, s, []int{1, 2, 3, 4})
			if n := rounds.Load(); n != 5 {
				t.Errorf("Before ran %d times, want once a round (5)", n)
			}
			// Backing off no more: Size runs a round at once again.
			add(b, 5)
			add(b, 6)
			synctest.Wait()
			wantWritten(t, s, []int{1, 2, 3, 4}, []int{5, 6})
		})
	})
	t.Run("OKBeforeFailsNoFlush", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			s := &store{}
			p := loop(s)
			p.Before = func(context.Context) error { return errFull }
			b := flush.New(p)
			b.Start()
			add(b, 1)
			add(b, 2)
			time.Sleep(10 * time.Second) // rounds at 0, 1, 3, 7 s: Before fails each
			synctest.Wait()
			if n := s.attempts(); n != 0 {
				t.Errorf("%d writes after Before failed, want none", n)
			}
			if err := b.Close(t.Context()); err != nil {
				t.Fatal(err)
			}
			wantWritten(t, s, []int{1, 2}) // Close writes what waits
		})
	})
	t.Run("OKPausedNoRound", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			s := &store{}
			p := loop(s)
			var paused atomic.Bool
			paused.Store(true)
			p.Paused = paused.Load
			b := flush.New(p)
			b.Start()
			defer b.Close(context.Background())
			add(b, 1)
			add(b, 2)
			time.Sleep(3 * time.Hour)
			synctest.Wait()
			if n := s.attempts(); n != 0 {
				t.Fatalf("%d writes while paused, want none", n)
			}
			paused.Store(false)
			time.Sleep(time.Hour)
			synctest.Wait()
			wantWritten(t, s, []int{1, 2})
		})
	})
	t.Run("OKCloseStopsTheLoop", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			s := &store{}
			b := flush.New(loop(s))
			b.Start()
			add(b, 1)
			if err := b.Close(t.Context()); err != nil {
				t.Fatal(err)
			}
			wantWritten(t, s, []int{1})
			time.Sleep(3 * time.Hour)
			synctest.Wait() // a loop still running would leave the bubble unable to end
			if n := s.attempts(); n != 1 {
				t.Errorf("%d writes, want 1", n)
			}
		})
	})
}

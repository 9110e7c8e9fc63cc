// Package flush holds Buffer: entries added in memory under a lock and
// written, a batch at a time, through the store's single writer, so that
// whoever adds one never waits for a write. The store's counted uses and
// recorded queries and the server's coalesced refusals are its three uses;
// each says in its Policy when a batch is due and what becomes of a batch
// whose write failed (docs/design.md, "Buffered writes"). It imports only
// the standard library, so storage and server may both use it.
package flush

import (
	"context"
	"sync"
	"time"
)

// Policy says what a Buffer holds, when it writes and what becomes of a
// batch whose write failed. New and Write are required; a zero field
// leaves its rule out.
type Policy[B any] struct {
	// New returns an empty batch.
	New func() B
	// Write stores a batch. The Buffer calls it for one batch at a time,
	// in the order the batches were taken.
	Write func(ctx context.Context, batch B) error

	// Size makes a flush due at once when this many entries wait: the
	// loop's next round when Start runs one, else a flush of its own.
	Size int
	// Max bounds what waits: an Add that finds Max entries waiting is
	// refused.
	Max int
	// Delay is how long after a batch's first entry its flush is due.
	Delay func(batch B) time.Duration
	// Ended says a batch's span (a minute of a clock) is over: the Add
	// that finds it so writes the batch before adding to a new one, and a
	// Delay that finds it not yet so waits again. Ended(New()) must be
	// false.
	Ended func(batch B) bool

	// Requeue puts a batch whose write failed back into what waits and
	// returns how many entries wait then: no entry is lost, each is
	// stored once.
	Requeue func(waiting *B, failed B) int
	// Lost is told of a batch of n entries whose write failed, when
	// Requeue is nil: those entries are gone.
	Lost func(batch B, n int, err error)

	// Every is the pause between the rounds of the loop Start runs. A
	// round runs Before, then flushes, whether entries wait or not.
	Every time.Duration
	// Before runs at the start of each round; its error ends the round
	// without a flush (the entries wait).
	Before func(ctx context.Context) error
	// Backoff returns the wait before the next round after one that
	// ended with err, prev being the previous one's (0 when not backing
	// off). Above 0 it replaces Every, and a Size flush waits for the
	// round: a disk that is full is probed no more often than Backoff says.
	Backoff func(prev time.Duration, err error) time.Duration
	// Paused reports a store that takes no write: a round then does
	// nothing, and the entries wait.
	Paused func() bool
	// Wake returns a channel on which a value runs a round at once,
	// backing off or not.
	Wake func() <-chan struct{}
}

// Buffer holds the entries added since the last flush as one batch of
// type B, and writes each batch through its Policy. It is safe for
// concurrent use.
type Buffer[B any] struct {
	p Policy[B]

	mu     sync.Mutex
	batch  B
	n      int  // entries in batch, as Add and Requeue last counted
	asked  bool // a Size flush was asked for this batch
	timer  *time.Timer
	timers uint64 // timers armed so far: the last is timer
	closed bool

	// flushing is held by a flush from taking its batch until its write
	// is done, so flushes run one at a time, and shared by Hold.
	flushing sync.RWMutex

	// kick asks the loop for a round; stop ends it and done says it has
	// ended. All three are nil until Start.
	kick, stop, done chan struct{}
	stopOnce         sync.Once
}

// New returns an empty Buffer with policy p.
func New[B any](p Policy[B]) *Buffer[B] {
	return &Buffer[B]{p: p, batch: p.New()}
}

// Add runs add on the batch waiting, under the Buffer's lock, and returns
// true; add returns how many entries wait after it. Once the Buffer is
// closed, or Max entries wait, Add runs nothing and returns false. A batch
// whose span has ended (Policy.Ended) is written first, by the caller.
func (b *Buffer[B]) Add(add func(batch *B) int) bool {
	b.mu.Lock()
	for !b.closed && b.p.Ended != nil && b.p.Ended(b.batch) {
		b.mu.Unlock()
		_ = b.flush(context.Background(), true, false) // a failure goes to Requeue or Lost
		b.mu.Lock()
	}
	defer b.mu.Unlock()
	if b.closed || (b.p.Max > 0 && b.n >= b.p.Max) {
		return false
	}
	b.n = add(&b.batch)
	b.schedule()
	return true
}

// schedule arms what the count of entries waiting makes due. b.mu is held.
func (b *Buffer[B]) schedule() {
	if b.n == 0 || b.closed {
		return
	}
	if b.p.Size > 0 && b.n >= b.p.Size && !b.asked {
		b.asked = true
		if b.kick != nil {
			select {
			case b.kick <- struct{}{}:
			default:
			}
		} else {
			go func() { _ = b.Flush(context.Background()) }()
		}
	}
	if b.p.Delay != nil && b.timer == nil {
		b.arm()
	}
}

// arm starts the Delay timer. b.mu is held.
func (b *Buffer[B]) arm() {
	b.timers++
	n := b.timers
	b.timer = time.AfterFunc(b.p.Delay(b.batch), func() { b.fire(n) })
}

// fire is the n-th Delay timer: it flushes the batch, or waits again while
// the batch's span lasts. A timer stopped or replaced meanwhile does
// nothing.
func (b *Buffer[B]) fire(armed uint64) {
	b.flushing.Lock()
	defer b.flushing.Unlock()
	b.mu.Lock()
	if b.timer == nil || b.timers != armed || b.closed {
		b.mu.Unlock()
		return
	}
	b.timer = nil
	if b.p.Ended != nil && !b.p.Ended(b.batch) {
		b.arm()
		b.mu.Unlock()
		return
	}
	batch, n := b.take()
	b.mu.Unlock()
	_ = b.write(context.Background(), batch, n) // a failure goes to Requeue or Lost
}

// Peek runs read on the batch waiting, under the Buffer's lock.
func (b *Buffer[B]) Peek(read func(batch B)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	read(b.batch)
}

// Hold keeps flushes off until release is called: a flush takes its batch
// out of memory before its write commits, so a read of the store and of
// Peek under one Hold counts every entry once.
func (b *Buffer[B]) Hold() (release func()) {
	b.flushing.RLock()
	return b.flushing.RUnlock
}

// Flush writes what waits now and returns the write's error; the batch
// then goes to Requeue or Lost.
func (b *Buffer[B]) Flush(ctx context.Context) error {
	return b.flush(ctx, false, false)
}

// flush takes the batch waiting (only if its span has ended, with ended)
// and writes it; with closing the Buffer refuses entries from then on.
func (b *Buffer[B]) flush(ctx context.Context, ended, closing bool) error {
	b.flushing.Lock()
	defer b.flushing.Unlock()
	b.mu.Lock()
	if ended && !b.p.Ended(b.batch) {
		b.mu.Unlock()
		return nil
	}
	b.closed = b.closed || closing
	batch, n := b.take()
	b.mu.Unlock()
	return b.write(ctx, batch, n)
}

// take swaps the batch waiting for an empty one and stops its timer.
// b.mu is held.
func (b *Buffer[B]) take() (B, int) {
	batch, n := b.batch, b.n
	b.batch, b.n, b.asked = b.p.New(), 0, false
	if b.timer != nil {
		b.timer.Stop()
		b.timer = nil
	}
	return batch, n
}

// write stores batch, of n entries, and hands it to Requeue or Lost when
// that fails. b.flushing is held.
func (b *Buffer[B]) write(ctx context.Context, batch B, n int) error {
	if n == 0 {
		return nil
	}
	err := b.p.Write(ctx, batch)
	switch {
	case err == nil:
	case b.p.Requeue != nil:
		b.mu.Lock()
		b.n = b.p.Requeue(&b.batch, batch)
		if b.p.Delay != nil && b.timer == nil && b.n > 0 && !b.closed {
			b.arm() // not a Size flush: the next Add asks for that
		}
		b.mu.Unlock()
	case b.p.Lost != nil:
		b.p.Lost(batch, n, err)
	}
	return err
}

// Start runs the loop of rounds (Policy.Every) until Close. Call it once,
// before the first Add.
func (b *Buffer[B]) Start() {
	b.mu.Lock()
	b.kick, b.stop, b.done = make(chan struct{}, 1), make(chan struct{}), make(chan struct{})
	b.mu.Unlock()
	go b.loop()
}

// loop runs a round every Policy.Every, when Size entries wait and when
// Wake delivers, and after a failed round waits as Backoff says.
func (b *Buffer[B]) loop() {
	defer close(b.done)
	ctx := context.Background()
	var wake <-chan struct{}
	if b.p.Wake != nil {
		wake = b.p.Wake()
	}
	t := time.NewTimer(b.p.Every)
	defer t.Stop()
	backoff := time.Duration(0)
	for {
		select {
		case <-b.stop:
			return
		case <-t.C:
		case <-b.kick:
			if backoff > 0 {
				continue // the timer still runs: no early round while backing off
			}
		case <-wake:
		}
		wait := b.p.Every
		if b.p.Paused == nil || !b.p.Paused() {
			err := b.round(ctx)
			if b.p.Backoff != nil {
				backoff = b.p.Backoff(backoff, err)
			}
			if backoff > 0 {
				wait = backoff
			}
		}
		t.Reset(wait)
	}
}

// round runs Before, then flushes.
func (b *Buffer[B]) round(ctx context.Context) error {
	if b.p.Before != nil {
		if err := b.p.Before(ctx); err != nil {
			return err
		}
	}
	return b.Flush(ctx)
}

// Close stops the loop, then writes what waits and refuses entries from
// then on; it returns that write's error.
func (b *Buffer[B]) Close(ctx context.Context) error {
	b.mu.Lock()
	stop := b.stop
	b.mu.Unlock()
	if stop != nil {
		b.stopOnce.Do(func() { close(stop) })
		<-b.done
	}
	return b.flush(ctx, false, true)
}

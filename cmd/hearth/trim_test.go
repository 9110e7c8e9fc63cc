package main

import (
	"context"
	"testing"
	"time"
)

// TestTrimLoop trims once when the check after the start is done (not
// again for the closed channel) and once a tick, and stops with its
// context.
func TestTrimLoop(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	checked := make(chan struct{})
	tick := make(chan time.Time)
	trims := make(chan struct{}, 100)
	done := make(chan struct{})
	go func() {
		defer close(done)
		trimLoop(ctx, checked, tick, func() { trims <- struct{}{} })
	}()
	// A deadlock guard, not a measure: a loop that is not waiting for a
	// tick would leave the test blocked.
	const stuck = 10 * time.Second
	close(checked)
	select {
	case <-trims:
	case <-time.After(stuck):
		t.Fatal("trimLoop did not trim when the check was done")
	}
	for range 3 {
		select {
		case tick <- time.Time{}:
		case <-time.After(stuck):
			t.Fatal("trimLoop took no tick")
		}
	}
	cancel()
	select {
	case <-done:
	case <-time.After(stuck):
		t.Fatal("trimLoop did not return when its context was done")
	}
	// Once a tick after the check's: a loop that took the closed channel
	// as a check again would have trimmed more.
	if got := len(trims); got != 3 {
		t.Errorf("trimmed %d times after the check, want 3 (one a tick)", got)
	}
}

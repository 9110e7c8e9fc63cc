package main

import (
	"context"
	"time"
)

// trimEvery is how often a serving process gives back the memory its work
// left resident (trimLoop).
const trimEvery = time.Minute

// trimLoop calls trim when checked closes (the whole-file check after the
// start is done) and on every tick, until ctx is done.
func trimLoop(ctx context.Context, checked <-chan struct{}, tick <-chan time.Time, trim func()) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-checked:
			checked = nil // a closed channel is ready for ever: once is enough
			trim()
		case <-tick:
			trim()
		}
	}
}

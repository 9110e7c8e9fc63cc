package engine

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestReadGate_Hold(t *testing.T) {
	t.Parallel() // each owns its engine, gather or gate
	t.Run("OK", func(t *testing.T) {
		var g readGate
		if err := g.enter(context.Background()); err != nil {
			t.Fatal(err)
		}
		type held struct {
			release func()
			drained bool
		}
		got := make(chan held, 1)
		go func() {
			release, drained := g.hold(time.Minute)
			got <- held{release, drained}
		}()
		// A new read waits while the gate is held.
		entered := make(chan error, 1)
		for {
			g.mu.Lock()
			h := g.held
			g.mu.Unlock()
			if h != nil {
				break
			}
			time.Sleep(time.Millisecond) // polling a condition, not waiting for time
		}
		go func() { entered <- g.enter(context.Background()) }()
		select {
		case h := <-got:
			t.Fatalf("hold returned %+v with a read in progress", h)
		case err := <-entered:
			t.Fatalf("a new read entered a held gate: %v", err)
		default:
		}
		g.leave()
		h := <-got
		if !h.drained {
			t.Fatal("hold: not drained once the read left")
		}
		select {
		case err := <-entered:
			t.Fatalf("a new read entered before release: %v", err)
		default:
		}
		h.release()
		if err := <-entered; err != nil {
			t.Fatal(err)
		}
		g.leave()
	})

	t.Run("ErrTimeout", func(t *testing.T) {
		var g readGate
		if err := g.enter(context.Background()); err != nil {
			t.Fatal(err)
		}
		release, drained := g.hold(10 * time.Millisecond)
		if drained {
			t.Error("drained with a read in progress")
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := g.enter(ctx); !errors.Is(err, context.Canceled) {
			t.Errorf("enter a held gate with a done context: %v", err)
		}
		release()
		g.leave()
		if err := g.enter(context.Background()); err != nil {
			t.Errorf("enter after release: %v", err)
		}
		g.leave()
	})
}

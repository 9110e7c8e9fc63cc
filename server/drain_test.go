package server

import (
	"context"
	"errors"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/hearth-memory/hearth/storage/testwait"
)

func TestGate_Drain(t *testing.T) {
	info := &grpc.UnaryServerInfo{FullMethod: "/hearth.v1.MemoryService/Store"}
	// hold runs a call through g whose handler waits for release.
	hold := func(g *gate) (started chan struct{}, release chan struct{}, done chan error) {
		started, release, done = make(chan struct{}), make(chan struct{}), make(chan error, 1)
		go func() {
			_, err := g.unary(context.Background(), nil, info, func(context.Context, any) (any, error) {
				close(started)
				<-release
				return "stored", nil
			})
			done <- err
		}()
		<-started
		return started, release, done
	}

	t.Run("OK", func(t *testing.T) {
		var g gate
		_, release, done := hold(&g)
		drained := make(chan error, 1)
		go func() { drained <- g.drain(context.Background()) }()
		// Poll until the gate is closed, then a new call is refused
		// without running.
		testwait.WaitFor(t, "the gate closes", g.closed.Load)
		ran := false
		_, err := g.unary(context.Background(), nil, info, func(context.Context, any) (any, error) { ran = true; return nil, nil })
		if status.Code(err) != codes.Unavailable || ran {
			t.Fatalf("call while draining: %v (ran %v), want UNAVAILABLE without running", err, ran)
		}
		select {
		case err := <-drained:
			t.Fatalf("drain returned %v with a call in flight", err)
		default:
		}
		close(release)
		if err := <-done; err != nil {
			t.Errorf("the call in flight: %v, want it finished", err)
		}
		if err := <-drained; err != nil {
			t.Errorf("drain: %v", err)
		}
		if err := g.drain(context.Background()); err != nil {
			t.Errorf("second drain: %v", err)
		}
	})

	t.Run("ErrDeadline", func(t *testing.T) {
		var g gate
		_, release, done := hold(&g)
		defer func() { close(release); <-done }()
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := g.drain(ctx); !errors.Is(err, context.Canceled) {
			t.Errorf("drain past its context: %v, want context.Canceled", err)
		}
	})
}

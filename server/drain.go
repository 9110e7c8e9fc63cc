package server

import (
	"context"
	"sync"
	"sync/atomic"

	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
	"github.com/hearth-memory/hearth/server/auth"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// gate lets calls in until the server drains, then refuses new ones with
// UNAVAILABLE while those in flight finish (issue #21: a SIGTERM during a
// write burst loses nothing acknowledged). It sits behind the
// authorization interceptor, so REST and MCP calls, which reach the
// server over the in-process channel, pass it like gRPC calls.
type gate struct {
	closed   atomic.Bool
	mu       sync.Mutex
	inFlight int
	idle     chan struct{} // closed when draining and nothing is in flight
}

// errDraining is what a call that arrives while the server drains gets.
var errDraining = status.Error(codes.Unavailable, "Hearth is shutting down: this call was not run; retry once it is back")

// unary admits a call, or refuses it while draining.
func (g *gate) unary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if !g.enter() {
		return nil, errDraining
	}
	defer g.leave()
	return handler(ctx, req)
}

func (g *gate) enter() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed.Load() {
		return false
	}
	g.inFlight++
	return true
}

func (g *gate) leave() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.inFlight--
	if g.inFlight == 0 && g.idle != nil {
		close(g.idle)
		g.idle = nil
	}
}

// drain refuses new calls from now on and waits until the calls in flight
// have finished or ctx ends; it returns ctx's error in the second case.
func (g *gate) drain(ctx context.Context) error {
	g.mu.Lock()
	g.closed.Store(true)
	if g.inFlight == 0 {
		g.mu.Unlock()
		return nil
	}
	if g.idle == nil {
		g.idle = make(chan struct{})
	}
	idle := g.idle
	g.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Drain makes the server refuse every new call with UNAVAILABLE and waits
// until the calls in flight have finished, or ctx ends (its error is
// returned). The daemon drains before it stops listening and closes the
// store, so every write a caller was told succeeded has been committed.
func (s *Server) Drain(ctx context.Context) error { return s.gate.drain(ctx) }

// Draining returns the UNAVAILABLE error a call gets once the server
// drains, and nil before: what the gate would answer a call now, for a
// check made without one (the MCP bridge's identity check).
func (s *Server) Draining() error {
	if s.gate.closed.Load() {
		return errDraining
	}
	return nil
}

// CallerCheck is the MCP bridge's identity check of a request no tool call
// vouched for: what a memory_whoami call would meet, the interceptor's
// decision (in) then the drain's, made without the call
// (docs/operations.md).
func (s *Server) CallerCheck(in *auth.Interceptor) func(ctx context.Context, authorization []string, addr string) error {
	return func(ctx context.Context, authorization []string, addr string) error {
		if err := in.Authenticate(ctx, hearthv1.AdminService_Whoami_FullMethodName, authorization, addr); err != nil {
			return err
		}
		return s.Draining()
	}
}

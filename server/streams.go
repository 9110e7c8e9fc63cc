package server

import (
	"fmt"
	"net/netip"
	"sync"
	"time"

	"github.com/hearth-memory/hearth/server/auth"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/status"
)

// Bounds on what gRPC streams hold (issue #41): the streaming methods are
// public ones (health Watch, reflection), which a caller may open without
// a token, and each open stream holds a goroutine and its buffers for as
// long as the caller keeps it. See docs/operations.md.
const (
	// MaxConcurrentStreams is how many streams (calls) one gRPC
	// connection may have open at once, announced in HTTP/2's SETTINGS; a
	// client past it waits for a call to end, and a stream opened past it
	// anyway is reset.
	MaxConcurrentStreams = 100
	// MaxOpenStreams is how many streaming calls the process keeps open at
	// once, MaxOpenStreamsPerPeer how many of them may come from one source
	// address. A streaming call past either is refused at once with
	// RESOURCE_EXHAUSTED.
	MaxOpenStreams        = 64
	MaxOpenStreamsPerPeer = 8
	// keepaliveMinTime is the shortest interval between a client's pings
	// the server tolerates (fewer than that, and only while a call is
	// open); a client that pings more often is sent GOAWAY.
	keepaliveMinTime = time.Minute
	// KeepaliveTime is how long a connection may be silent before the
	// server pings it, KeepaliveTimeout how long it then waits for the
	// answer before closing it: a peer that vanished does not keep its
	// streams open.
	KeepaliveTime    = 2 * time.Minute
	KeepaliveTimeout = 20 * time.Second
)

// streamOptions bound streams per connection and enforce the keepalive
// policy on connections grpc-go serves itself; maxConnectionIdle closes a
// connection without calls that long. A daemon that serves gRPC through
// net/http (over TLS) sets MaxConcurrentStreams, KeepaliveTime and
// KeepaliveTimeout on its HTTP/2 server too: there these options do not
// reach.
func streamOptions(maxConnectionIdle time.Duration) []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.MaxConcurrentStreams(MaxConcurrentStreams),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: keepaliveMinTime}),
		grpc.KeepaliveParams(keepalive.ServerParameters{
			MaxConnectionIdle: maxConnectionIdle, Time: KeepaliveTime, Timeout: KeepaliveTimeout,
		}),
	}
}

// streamLimit counts the open streaming calls, in all and by source
// address (an unknown address counts as one address).
type streamLimit struct {
	mu    sync.Mutex
	open  int
	peers map[netip.Addr]int
}

// intercept is the stream interceptor that refuses a streaming call past
// MaxOpenStreams or MaxOpenStreamsPerPeer.
func (l *streamLimit) intercept(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	addr := auth.SourceAddr(ss.Context())
	l.mu.Lock()
	if l.peers == nil {
		l.peers = map[netip.Addr]int{}
	}
	switch {
	case l.open >= MaxOpenStreams:
		l.mu.Unlock()
		return status.Error(codes.ResourceExhausted, fmt.Sprintf("too many open streams: at most %d at once", MaxOpenStreams))
	case l.peers[addr] >= MaxOpenStreamsPerPeer:
		l.mu.Unlock()
		return status.Error(codes.ResourceExhausted, fmt.Sprintf("too many open streams from this address: at most %d at once", MaxOpenStreamsPerPeer))
	}
	l.open++
	l.peers[addr]++
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		l.open--
		if l.peers[addr]--; l.peers[addr] == 0 {
			delete(l.peers, addr)
		}
		l.mu.Unlock()
	}()
	return handler(srv, ss)
}

// Package auth is Hearth's single authorization point: one gRPC interceptor
// (unary and stream) that every call passes, whichever transport it came in
// on. REST and MCP reach it through the in-process channel with the
// original caller's Authorization header and source address.
//
// Each RPC declares the scope it needs through the hearth.v1.tool method
// option. The method table (Table) is built at start from the same walk over
// the descriptors that makes the REST routes and MCP tools; a method missing
// from it is denied (fail closed). A caller is identified by a bearer
// token (compared as SHA-256 digests in constant time) or, failing that, by
// source address; an address client gets read at most.
package auth

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/hearth-memory/hearth/server/inproc"
	"github.com/hearth-memory/hearth/server/options"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// Scope is a permission a call may need: one of the five scopes of
// package options, or Public.
type Scope = options.Scope

// The five scopes.
const (
	Read   = options.ScopeRead
	Write  = options.ScopeWrite
	Delete = options.ScopeDelete
	Export = options.ScopeExport
	Admin  = options.ScopeAdmin
	// Public marks a method anyone may call (health checks, reflection).
	Public Scope = "public"
)

// Client is a configured caller.
type Client struct {
	Name   string
	Scopes []Scope
	// IP identifies an address client; the zero value means none.
	IP netip.Addr
	// TokenSHA256 is the SHA-256 digest of the client's bearer token; nil
	// means the client has no token.
	TokenSHA256 []byte
	// Stored marks a generated token, whose digest the database keeps:
	// once the interceptor reads stored digests (ReadStored), each call
	// compares against the database's current digest of the client
	// instead of TokenSHA256.
	Stored bool
}

// StoredTokens returns the database's current token digests by client
// name. Its error is the call's answer, as the server maps it.
type StoredTokens func(ctx context.Context) (map[string][]byte, error)

// Caller is the authenticated identity of a call, available to handlers
// through FromContext.
type Caller struct {
	Name string
	// ByToken is true for a token client, false for an address client. Only
	// token clients write (docs/design.md R-A5).
	ByToken bool
	Scopes  []Scope
	// Addr is the caller's source address, when known.
	Addr netip.Addr
}

// Has reports whether the caller holds scope s.
func (c Caller) Has(s Scope) bool {
	for _, x := range c.Scopes {
		if x == s {
			return true
		}
	}
	return false
}

type callerKey struct{}

// FromContext returns the caller the interceptor authenticated.
func FromContext(ctx context.Context) (Caller, bool) {
	c, ok := ctx.Value(callerKey{}).(Caller)
	return c, ok
}

// Denial describes a refused call for the audit. It never carries a token.
type Denial struct {
	Client string // the known client, or "" when unauthenticated
	Method string
	Code   codes.Code
	Reason string
	// Addr is the caller's source address, when known.
	Addr netip.Addr
}

// Done describes a finished call for the access log. It never carries the
// request, the response or a token.
type Done struct {
	Method string
	// Client is the authenticated client, or "" when the call was refused
	// before one was known.
	Client   string
	Code     codes.Code
	Duration time.Duration
}

// Interceptor authorizes every call.
type Interceptor struct {
	methods map[string]Scope
	// mu guards tokens, which SetToken replaces while calls run, and
	// stored.
	mu     sync.RWMutex
	tokens []Client
	stored StoredTokens
	addrs  map[netip.Addr]Client
	// OnRefuse, when set, is called for every refused call (the audit).
	OnRefuse func(ctx context.Context, r Denial)
	// OnDone, when set, is called after every call of a method that is not
	// public, refused or not (the access log).
	OnDone func(ctx context.Context, d Done)
}

// New returns an interceptor for the given clients and method table (full
// gRPC method name, e.g. /hearth.v1.MemoryService/Store, to scope).
func New(clients []Client, methods map[string]Scope) *Interceptor {
	in := &Interceptor{methods: methods, addrs: map[netip.Addr]Client{}}
	for _, c := range clients {
		if c.TokenSHA256 != nil {
			in.tokens = append(in.tokens, c)
		}
		if c.IP.IsValid() {
			in.addrs[c.IP.Unmap()] = c
		}
	}
	return in
}

// SetToken replaces the token digest of the token client name, so that
// from its return on the old token is refused and the new one accepted. It
// reports false, changing nothing, when no token client has that name.
func (in *Interceptor) SetToken(name string, sum []byte) bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	for i := range in.tokens {
		if in.tokens[i].Name == name {
			// A new slice: a caller that read the old one keeps a
			// consistent view, and no reader sees a half-written digest.
			tokens := append([]Client(nil), in.tokens...)
			tokens[i].TokenSHA256 = append([]byte(nil), sum...)
			in.tokens = tokens
			return true
		}
	}
	return false
}

// ReadStored makes every call with a token read the stored digests of
// the Stored clients through read, so that a rotation committed by any
// front end on the database counts from the next call on
// (docs/operations.md, "Tokens"). A Stored client the database has no
// digest for has no token. Without a Stored client it changes nothing:
// no call reads.
func (in *Interceptor) ReadStored(read StoredTokens) {
	in.mu.Lock()
	defer in.mu.Unlock()
	for _, c := range in.tokens {
		if c.Stored {
			in.stored = read
			return
		}
	}
}

// Unary is the unary server interceptor.
func (in *Interceptor) Unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
	var client string
	defer in.done(ctx, info.FullMethod, time.Now(), &client, &err)
	authed, client, err := in.authorize(ctx, info.FullMethod)
	if err != nil {
		return nil, err
	}
	return handler(authed, req)
}

// Stream is the stream server interceptor.
func (in *Interceptor) Stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
	var client string
	defer in.done(ss.Context(), info.FullMethod, time.Now(), &client, &err)
	ctx, client, err := in.authorize(ss.Context(), info.FullMethod)
	if err != nil {
		return err
	}
	return handler(srv, &stream{ServerStream: ss, ctx: ctx})
}

// done reports a finished call to OnDone.
func (in *Interceptor) done(ctx context.Context, method string, start time.Time, client *string, err *error) {
	if in.OnDone == nil || in.methods[method] == Public {
		return
	}
	in.OnDone(ctx, Done{Method: method, Client: *client, Code: status.Code(*err), Duration: time.Since(start)})
}

type stream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *stream) Context() context.Context { return s.ctx }

// authorize identifies the caller of method and checks its scope. It
// returns the context handlers run with and the client's name ("" when
// none is known).
func (in *Interceptor) authorize(ctx context.Context, method string) (context.Context, string, error) {
	need, ok := in.methods[method]
	if !ok {
		return nil, "", in.refuse(ctx, Denial{Method: method, Code: codes.PermissionDenied, Reason: "method declares no scope"})
	}
	addr := SourceAddr(ctx)
	if need == Public {
		return ctx, "", nil
	}
	caller, err := in.identify(ctx, metadata.ValueFromIncomingContext(ctx, "authorization"), addr)
	if _, refused := err.(authError); refused {
		return nil, "", in.refuse(ctx, Denial{Method: method, Code: codes.Unauthenticated, Reason: err.Error(), Addr: addr})
	} else if err != nil {
		return nil, "", err
	}
	if !caller.Has(need) {
		return nil, caller.Name, in.refuse(ctx, Denial{Client: caller.Name, Method: method, Code: codes.PermissionDenied,
			Reason: "client " + caller.Name + " lacks scope " + string(need), Addr: addr})
	}
	return context.WithValue(ctx, callerKey{}, caller), caller.Name, nil
}

func (in *Interceptor) refuse(ctx context.Context, r Denial) error {
	if in.OnRefuse != nil {
		in.OnRefuse(ctx, r)
	}
	if r.Code == codes.Unauthenticated {
		return status.Error(codes.Unauthenticated, "unauthenticated: "+r.Reason)
	}
	return status.Error(r.Code, "permission denied: "+r.Reason)
}

type authError string

func (e authError) Error() string { return string(e) }

// Authenticate decides, without a call, whether a request with these
// authorization values from addr (the caller's address as text) has a
// known caller: nil, or the UNAUTHENTICATED error a call of method would
// get, refused (and reported to OnRefuse) as that call would be. A known
// caller is not checked for method's scope. The MCP bridge asks it about
// a request no tool call has vouched for (docs/operations.md, "How far
// one box goes").
func (in *Interceptor) Authenticate(ctx context.Context, method string, authorization []string, addr string) error {
	a := parseAddr(addr)
	_, err := in.identify(ctx, authorization, a)
	if _, refused := err.(authError); refused {
		return in.refuse(ctx, Denial{Method: method, Code: codes.Unauthenticated, Reason: err.Error(), Addr: a})
	}
	return err
}

// identify finds the caller of the authorization values (the header
// alone, not a copy of all the call's metadata) from addr. It refuses with
// an authError; any other error is the stored digests' read failing.
func (in *Interceptor) identify(ctx context.Context, vals []string, addr netip.Addr) (Caller, error) {
	if len(vals) > 0 {
		token, ok := bearer(vals[0])
		if !ok || len(vals) > 1 {
			return Caller{}, authError("malformed authorization")
		}
		sum := sha256.Sum256([]byte(token))
		in.mu.RLock()
		tokens, read := in.tokens, in.stored
		in.mu.RUnlock()
		var stored map[string][]byte
		if read != nil {
			var err error
			if stored, err = read(ctx); err != nil {
				return Caller{}, err
			}
		}
		var found *Client
		// Compare against every client so timing does not reveal which one
		// (or whether any) matched.
		for i := range tokens {
			digest := tokens[i].TokenSHA256
			if read != nil && tokens[i].Stored {
				digest = stored[tokens[i].Name]
			}
			if subtle.ConstantTimeCompare(sum[:], digest) == 1 {
				found = &tokens[i]
			}
		}
		if found == nil {
			return Caller{}, authError("unknown token")
		}
		return Caller{Name: found.Name, ByToken: true, Scopes: found.Scopes, Addr: addr}, nil
	}
	if addr.IsValid() {
		if c, ok := in.addrs[addr]; ok {
			var scopes []Scope
			if hasScope(c.Scopes, Read) {
				scopes = []Scope{Read} // an address client reads at most (R-A4)
			}
			return Caller{Name: c.Name, Scopes: scopes, Addr: addr}, nil
		}
	}
	return Caller{}, authError("no credentials")
}

func hasScope(ss []Scope, s Scope) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func bearer(v string) (string, bool) {
	const prefix = "bearer "
	if len(v) <= len(prefix) || !strings.EqualFold(v[:len(prefix)], prefix) {
		return "", false
	}
	t := strings.TrimSpace(v[len(prefix):])
	return t, t != ""
}

// InProcessNetwork is the network name of the peer of calls over the
// in-process channel the gateway and the MCP bridge call through (package
// inproc). Only calls arriving on it may name their caller's source address
// in metadata.
const InProcessNetwork = inproc.Network

// SourceAddr returns the address of the original caller. For calls over the
// in-process channel (REST and MCP) it is the last x-forwarded-for entry
// that the gateway or bridge set; for every other peer forwarded metadata is
// ignored and the peer's own address is used (docs/design.md R-A6).
func SourceAddr(ctx context.Context) netip.Addr {
	p, ok := peer.FromContext(ctx)
	if !ok || p.Addr == nil {
		return netip.Addr{}
	}
	if p.Addr.Network() == InProcessNetwork {
		vals := metadata.ValueFromIncomingContext(ctx, "x-forwarded-for")
		if len(vals) == 0 {
			return netip.Addr{}
		}
		parts := strings.Split(vals[len(vals)-1], ",")
		return parseAddr(strings.TrimSpace(parts[len(parts)-1]))
	}
	return parseAddr(p.Addr.String())
}

func parseAddr(s string) netip.Addr {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap()
	}
	if host, _, err := net.SplitHostPort(s); err == nil {
		s = host
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}
	}
	return a.Unmap()
}

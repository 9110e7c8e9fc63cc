// Package servertest starts Hearth's server for a test as the daemon wires
// it, without the daemon's process: a migrated SQLite store in the test's
// temp dir (or a store the test opened, StartOn), the generated client tokens, the one authorization interceptor,
// the job runner, gRPC on 127.0.0.1:0, and REST and MCP on an HTTP server
// on 127.0.0.1:0 calling the services through the in-process channel.
// A test reaches it with three clients: the generated gRPC clients over
// Conn, REST over net/http with a bearer token, and mark3labs/mcp-go's
// client over streamable HTTP; Transports calls a tool by name over each
// with one Result shape, for scenarios run over all three.
//
// It is test support: it imports the transports (gateway, mcpbridge), so
// only _test files may import it; cmd/hearth/arch_test.go enforces both
// (docs/design.md, "Where tests live").
package servertest

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hearth-memory/hearth/gateway"
	"github.com/hearth-memory/hearth/gateway/rest"
	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
	"github.com/hearth-memory/hearth/mcpbridge"
	"github.com/hearth-memory/hearth/server"
	"github.com/hearth-memory/hearth/server/answers"
	"github.com/hearth-memory/hearth/server/auth"
	"github.com/hearth-memory/hearth/server/budget"
	"github.com/hearth-memory/hearth/server/options"
	"github.com/hearth-memory/hearth/server/scope"
	"github.com/hearth-memory/hearth/server/sweep"
	"github.com/hearth-memory/hearth/server/version"
	"github.com/hearth-memory/hearth/server/workers"
	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/storagetest"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
)

// Server is a running server with its store and clients. Everything
// closes when the test ends.
type Server struct {
	// DB is the store the server runs on, for a test that seeds or reads
	// state the API does not reach.
	DB *storage.DB
	// Server is the services' implementation.
	Server *server.Server
	// Dir is the data directory (hearth.db, tokens/, backups/).
	Dir string
	// URL is the HTTP server's base: REST under /api/, MCP at /mcp.
	URL string
	// Conn is a gRPC client connection to the gRPC listener, for the
	// generated clients (hearthv1.NewMemoryServiceClient(s.Conn)).
	Conn *grpc.ClientConn
	// Tokens are the clients' generated tokens by client name.
	Tokens map[string]string
	// Methods is the interceptor's method table: the scope each RPC's
	// full method name demands.
	Methods map[string]auth.Scope
	// REST, MCP and GRPC call a tool by name over each transport.
	REST REST
	MCP  MCP
	GRPC GRPC

	stop func()
}

// Start runs the server with opts (options.Default() and its clients
// give claude-code, codex, ... their default scopes). It fails the test if
// anything does not start.
func Start(tb testing.TB, opts options.Options) *Server {
	tb.Helper()
	return StartAt(tb, opts, nil)
}

// StartAt is Start with the store's and the model router's clock, now
// (nil: the wall clock), set before anything is written, as the daemon
// sets its Now.
func StartAt(tb testing.TB, opts options.Options, now func() time.Time) *Server {
	tb.Helper()
	db := storagetest.Open(tb)
	if now != nil {
		db.Now = now
	}
	dir := filepath.Dir(db.Path())
	if db.Path() == "" {
		dir = tb.TempDir() // PostgreSQL: no file, and the data directory its own
	}
	return start(tb, db, dir, opts, now)
}

// StartOn runs the server with opts on db, open already, with dir as its
// data directory (tokens/, backups/). Two of them on two DBs opened on one
// PostgreSQL database, each with its own dir, are two front ends, as two
// `hearth serve --database URL --data DIR` are (docs/operations.md,
// "PostgreSQL"). The caller opened db before, so that the server closes
// first; Stop stops it before the test ends.
func StartOn(tb testing.TB, db *storage.DB, dir string, opts options.Options) *Server {
	tb.Helper()
	return start(tb, db, dir, opts, nil)
}

// Stop stops the server as the test's end does (drain, listeners, the
// background work, the server); the store stays open. Stopping twice, or
// at the end after Stop, does nothing more.
func (s *Server) Stop() { s.stop() }

func start(tb testing.TB, db *storage.DB, dir string, opts options.Options, now func() time.Time) *Server {
	tb.Helper()
	ctx := context.Background()
	s := &Server{DB: db, Dir: dir, Tokens: map[string]string{}}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	fail := func(what string, err error) {
		if err != nil {
			tb.Fatalf("servertest: %s: %v", what, err)
		}
	}
	fail("namespace renames", server.ApplyRenames(ctx, db, opts.NamespaceRenames, log))
	_, err := db.StartUsage(ctx)
	fail("start usage", err)
	tokensDir := filepath.Join(s.Dir, "tokens")
	tokens, err := server.ProvisionTokens(ctx, db, opts.Clients, tokensDir)
	fail("tokens", err)
	for _, name := range tokens.Generated {
		b, err := os.ReadFile(filepath.Join(tokensDir, name))
		fail("token", err)
		s.Tokens[name] = strings.TrimSpace(string(b))
	}
	routes, err := gateway.Routes()
	fail("routes", err)
	scopes, tools := make(map[string]hearthv1.Scope, len(routes)), make(map[string]string, len(routes))
	for _, r := range routes {
		scopes[r.FullMethod()], tools[r.FullMethod()] = r.Scope(), r.Tool.GetName()
	}
	methods, err := auth.Table(scopes)
	fail("method table", err)
	s.Methods = methods
	router, err := workers.NewRouter(ctx, db, opts, now, log)
	fail("model router", err)
	sw := sweep.New(nil)
	srv, err := server.New(db, server.Config{
		Version: version.Version, Log: log, Options: opts, Sweeper: sw,
		Marshal: gateway.MarshalResult,
		Carrier: func(ctx context.Context) budget.Carrier {
			if w := gateway.WireFrom(ctx); w.MCP {
				return w
			}
			return nil
		},
		Models:    router,
		TokensDir: tokensDir, BackupDir: filepath.Join(s.Dir, "backups"), Tools: tools,
	})
	fail("server", err)
	s.Server = srv
	in := auth.New(tokens.Clients, methods)
	in.OnRefuse = srv.AuditRefusal
	in.OnDone = func(_ context.Context, done auth.Done) { srv.ObserveCall(done) }

	g := srv.NewGRPC(in, time.Minute)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	fail("listen", err)
	go g.Serve(ln)

	conn := srv.NewChannel(in)
	api, err := rest.New(conn)
	fail("rest", err)
	bridge, err := mcpbridge.New(conn, version.Version, mcpbridge.WithCallerCheck(srv.CallerCheck(in)))
	fail("mcp", err)
	mux := http.NewServeMux()
	mux.Handle("/api/", api)
	mux.Handle("/mcp", bridge)
	hs := httptest.NewServer(gateway.Boundary(mux))
	s.URL = hs.URL

	w, err := workers.New(workers.Config{DB: db, Options: opts, Log: log, Models: router, Check: srv.CheckCandidate, Sweeper: sw})
	fail("workers", err)
	w.HandleAnswers(&answers.Composer{DB: db, Scopes: scope.New(opts), Models: router}, answers.DefaultRefresh)
	fail("workers start", w.Start(ctx))

	s.Conn, err = grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	fail("dial", err)
	s.REST, s.MCP, s.GRPC = REST{URL: s.URL}, MCP{URL: s.URL}, GRPC{Conn: s.Conn}
	// Closed as the daemon closes (before the store, which storagetest
	// closes after this cleanup): drain, stop listening, stop the
	// background work, then the server.
	s.stop = sync.OnceFunc(func() {
		s.Conn.Close()
		if err := srv.Drain(ctx); err != nil {
			tb.Errorf("servertest: drain: %v", err)
		}
		hs.Close()
		g.Stop()
		w.Stop()
		if err := srv.Close(ctx); err != nil {
			tb.Errorf("servertest: close: %v", err)
		}
	})
	tb.Cleanup(s.Stop)
	return s
}

// Transports are the three ways to call a tool, REST, MCP and gRPC.
func (s *Server) Transports() []Transport { return []Transport{s.REST, s.MCP, s.GRPC} }

// Context returns a context whose outgoing gRPC metadata carries token as
// the bearer, for the generated clients over Conn.
func (s *Server) Context(tb testing.TB, token string) context.Context {
	return metadata.AppendToOutgoingContext(tb.Context(), "authorization", "Bearer "+token)
}

// MCPClient returns mark3labs/mcp-go's client connected to /mcp over
// streamable HTTP with token as the bearer, initialized; it closes when
// the test ends.
func (s *Server) MCPClient(tb testing.TB, token string) *client.Client {
	tb.Helper()
	c, err := client.NewStreamableHttpClient(s.URL+"/mcp",
		transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
	if err != nil {
		tb.Fatalf("servertest: mcp client: %v", err)
	}
	tb.Cleanup(func() { c.Close() })
	if err := c.Start(tb.Context()); err != nil {
		tb.Fatalf("servertest: mcp client start: %v", err)
	}
	req := mcp.InitializeRequest{}
	req.Params.ClientInfo = mcp.Implementation{Name: "servertest", Version: "1"}
	if _, err := c.Initialize(tb.Context(), req); err != nil {
		tb.Fatalf("servertest: mcp initialize: %v", err)
	}
	return c
}

// WithClient returns opts with one more token client, name, holding
// exactly scopes: Start generates its token (Tokens[name]).
func WithClient(opts options.Options, name string, scopes ...options.Scope) options.Options {
	opts.Clients = append(slices.Clip(opts.Clients), options.Client{Name: name, Scopes: scopes})
	return opts
}

// CloseArgs are memory_session_close's arguments for session sess-1 in
// github/acme/api.
func CloseArgs(opID, summary, notes string) map[string]any {
	return map[string]any{
		"session_id": "sess-1", "namespace": "github/acme/api", "op_id": opID, "summary": summary, "notes": notes,
	}
}

// StoreArgs are memory_store's arguments for a decision.
func StoreArgs(ns, title, content string) map[string]any {
	return map[string]any{"namespace": ns, "type": "decision", "title": title, "content": content}
}

// ReaderIP is the source address of the address client "lan-reader" in
// Options. Linux routes all of 127.0.0.0/8 to loopback, so a test client
// can bind it (DialFrom).
var ReaderIP = netip.MustParseAddr("127.0.0.2")

// Options are the defaults plus an address client, lan-reader, that is
// configured with write scope (which it must not get: an address client
// only reads).
func Options() options.Options {
	o := options.Default()
	o.Clients = append(o.Clients,
		options.Client{Name: "lan-reader", Scopes: []options.Scope{"read", "write"}, IP: ReaderIP},
	)
	return o
}

// ParityOptions are Options with every scope for claude-code, the client
// a test calls every tool with, admin and export tools included.
func ParityOptions() options.Options {
	o := Options()
	for i := range o.Clients {
		if o.Clients[i].Name == "claude-code" {
			o.Clients[i].Scopes = options.Scopes()
		}
	}
	return o
}

// DialFrom returns an HTTP client whose connections come from local
// address ip.
func DialFrom(ip netip.Addr) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: ip.AsSlice()}}
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
}

// Clock is a clock tests move by hand (StartAt(tb, opts, clock.Now)). The
// server's goroutines read it, so it is atomic.
type Clock struct{ ns atomic.Int64 }

// NewClock returns a Clock set to t.
func NewClock(t time.Time) *Clock {
	c := &Clock{}
	c.Set(t)
	return c
}

func (c *Clock) Now() time.Time      { return time.Unix(0, c.ns.Load()).UTC() }
func (c *Clock) Set(t time.Time)     { c.ns.Store(t.UnixNano()) }
func (c *Clock) Add(d time.Duration) { c.ns.Add(int64(d)) }

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"

	"github.com/hearth-memory/hearth/gateway"
	"github.com/hearth-memory/hearth/mcpbridge"
	"github.com/hearth-memory/hearth/server"
	"github.com/hearth-memory/hearth/server/auth"
	"github.com/hearth-memory/hearth/server/version"
	"github.com/hearth-memory/hearth/storage"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"
)

// Daemon is a running Hearth: the store, the gRPC server with its
// interceptor, and one HTTP listener that serves gRPC, REST, MCP and health.
// REST and MCP call the gRPC server through an in-process connection, so
// every call passes the same interceptor.
type Daemon struct {
	Config Config
	Log    *slog.Logger

	db     *storage.DB
	grpc   *grpc.Server
	inproc *bufconn.Listener
	conn   *grpc.ClientConn
	http   *http.Server
	ln     net.Listener
	tokens *server.Provisioned
}

// Open starts the daemon. On error, everything opened so far is closed.
func (d *Daemon) Open(ctx context.Context) (err error) {
	defer func() {
		if err != nil {
			d.Close(context.Background())
		}
	}()
	if d.Log == nil {
		d.Log = slog.Default()
	}
	if d.db, err = storage.Open(ctx, filepath.Join(d.Config.DataDir, "hearth.db")); err != nil {
		return err
	}
	if d.tokens, err = server.ProvisionTokens(ctx, d.db, d.Config.Options.Clients, d.TokensDir()); err != nil {
		return err
	}
	if len(d.tokens.Generated) > 0 {
		d.Log.Info("generated client tokens", "clients", strings.Join(d.tokens.Generated, ","), "dir", d.TokensDir())
	}
	methods, err := auth.Methods()
	if err != nil {
		return err
	}
	srv := server.New(d.db, server.Config{Version: version.Version, Log: d.Log})
	in := auth.New(d.tokens.Clients, methods)
	in.OnRefuse = srv.AuditRefusal
	d.grpc = srv.NewGRPC(in)

	d.inproc = bufconn.Listen(1 << 20)
	go d.grpc.Serve(d.inproc)
	d.conn, err = grpc.NewClient("passthrough:///inproc",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return d.inproc.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
	)
	if err != nil {
		return err
	}
	rest, err := gateway.New(ctx, d.conn)
	if err != nil {
		return err
	}
	mcp, err := mcpbridge.New(d.conn, version.Version)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]string{"status": "ok", "version": version.Version})
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("ok\n"))
	})
	mux.Handle("/api/", rest)
	mux.Handle("/mcp", mcp)

	if d.ln, err = net.Listen("tcp", d.Config.Listen); err != nil {
		return err
	}
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	protocols.SetUnencryptedHTTP2(true)
	d.http = &http.Server{
		Handler:   root(d.grpc, gateway.Boundary(mux)),
		Protocols: &protocols,
		ErrorLog:  slog.NewLogLogger(d.Log.Handler(), slog.LevelWarn),
	}
	go func() {
		if err := d.http.Serve(d.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			d.Log.Error("http serve", "err", err)
		}
	}()
	return nil
}

// root sends gRPC (HTTP/2, application/grpc) to the gRPC server and
// everything else to the HTTP mux, and stamps the version on every reply.
func root(g *grpc.Server, mux http.Handler) http.Handler {
	server := "hearth/" + version.Version
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Server", server)
		if r.ProtoMajor == 2 && strings.HasPrefix(r.Header.Get("Content-Type"), "application/grpc") {
			g.ServeHTTP(w, r)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// Addr returns the address the daemon listens on.
func (d *Daemon) Addr() string { return d.ln.Addr().String() }

// TokensDir is where generated client tokens are written.
func (d *Daemon) TokensDir() string { return filepath.Join(d.Config.DataDir, "tokens") }

// Close stops accepting calls, lets calls in flight finish until ctx ends,
// and closes the store.
func (d *Daemon) Close(ctx context.Context) error {
	var errs []error
	if d.http != nil {
		if err := d.http.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("http: %w", err))
		}
	}
	if d.conn != nil {
		d.conn.Close()
	}
	if d.grpc != nil {
		d.grpc.GracefulStop()
	}
	if d.db != nil {
		if err := d.db.Close(); err != nil {
			errs = append(errs, fmt.Errorf("storage: %w", err))
		}
	}
	return errors.Join(errs...)
}

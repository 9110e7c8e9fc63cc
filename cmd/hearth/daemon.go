package main

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/hearth-memory/hearth/gateway"
	"github.com/hearth-memory/hearth/gateway/page"
	"github.com/hearth-memory/hearth/gateway/rest"
	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
	"github.com/hearth-memory/hearth/mcpbridge"
	"github.com/hearth-memory/hearth/server"
	"github.com/hearth-memory/hearth/server/answers"
	"github.com/hearth-memory/hearth/server/auth"
	"github.com/hearth-memory/hearth/server/budget"
	"github.com/hearth-memory/hearth/server/inproc"
	"github.com/hearth-memory/hearth/server/options"
	"github.com/hearth-memory/hearth/server/scope"
	"github.com/hearth-memory/hearth/server/version"
	"github.com/hearth-memory/hearth/server/workers"
	"github.com/hearth-memory/hearth/storage"
	"github.com/soheilhy/cmux"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
)

// Daemon is a running Hearth: the store, the gRPC server with its
// interceptor, and one port that serves gRPC (grpc-go's own transport) and,
// over HTTP/1.1, REST, MCP and health.
// REST and MCP call the services through the in-process channel (package
// inproc), behind the same interceptors as a gRPC call, so every call
// passes the same authorization.
type Daemon struct {
	Config Config
	Log    *slog.Logger
	// Now, when set, is the store's clock (storage.DB.Now): tests move it to
	// see time-based behaviour such as unused records.
	Now func() time.Time
	// IngressAllow, when set, replaces page.IngressAllowed as the rule for
	// which TCP peers the ingress listener serves: tests narrow it to prove
	// a refusal from a loopback address.
	IngressAllow func(netip.Addr) bool
	// PageShowTokens, when set, replaces the page's rule for which peers see
	// generated tokens (by default only the ingress proxy): tests widen it
	// to check the page as the Home Assistant admin sees it.
	PageShowTokens func(netip.Addr) bool

	// StoreVFS, when set, names the SQLite VFS the store opens its files
	// through (storage.WithVFS): tests use package faultvfs to fill the
	// disk. No flag or option sets it.
	StoreVFS string
	// HeaderTimeout, when set, replaces headerTimeout: tests shorten it to
	// see a silent connection closed. No flag or option sets it.
	HeaderTimeout time.Duration
	// CheckHold, when set, holds the whole-file check after the start
	// (checkStore) until it is closed: tests see the daemon serve before
	// the check ends. No flag or option sets it.
	CheckHold chan struct{}

	db   *storage.DB
	srv  *server.Server
	grpc *grpc.Server
	// conn is the in-process channel the gateway, the bridge, the page and
	// the metrics handler call the services through.
	conn   *inproc.Channel
	http   *http.Server
	ln     net.Listener
	tokens *server.Provisioned
	// workers run the job queue and scheduled maintenance (docs/design.md R-J).
	workers *workers.Workers
	// embedder keeps record vectors current; nil without embed_url.
	embedder *workers.Embedder

	ingress   *http.Server
	ingressLn net.Listener
	// admin serves the local admin on the data directory's admin socket
	// (adminsock.go); nil when the socket could not be made.
	admin   *http.Server
	adminLn net.Listener
	// split hands the port's connections to gRPC or HTTP.
	split cmux.CMux
	// checkStop ends the whole-file check begun after the start
	// (checkStore); checked is closed once it has ended.
	checkStop context.CancelFunc
	checked   chan struct{}
}

// How long a connection may take to send its first bytes (the gRPC or
// HTTP split) and its request headers, and stay idle between requests.
const (
	headerTimeout = 10 * time.Second
	idleTimeout   = 2 * time.Minute
)

func (d *Daemon) headerTimeout() time.Duration {
	if d.HeaderTimeout > 0 {
		return d.HeaderTimeout
	}
	return headerTimeout
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
	// The whole-file check runs once the daemon serves (checkStore).
	opts := []storage.Option{storage.CheckLater()}
	if d.StoreVFS != "" {
		opts = append(opts, storage.WithVFS(d.StoreVFS))
	}
	if d.db, err = d.openStore(ctx, opts); err != nil {
		return err
	}
	d.logStore(ctx)
	if d.Now != nil {
		d.db.Now = d.Now
	}
	// Recorded queries are written in batches off the search path; a batch
	// that fails is lost and said so here.
	d.db.OnAskError(func(err error) { d.Log.Error("recorded queries", "err", err) })
	// namespace_renames move records before any request can see them (R-N6).
	if err = server.ApplyRenames(ctx, d.db, d.Config.Options.NamespaceRenames, d.Log); err != nil {
		return err
	}
	// The first start marks when usage counting began (R-K6); later starts keep it.
	if _, err = d.db.StartUsage(ctx); err != nil {
		return err
	}
	// The first prompt recall after a start answers within the hook's
	// deadline like any other: its cold work is done here.
	if err = d.db.Warm(ctx); err != nil {
		return err
	}
	if d.tokens, err = server.ProvisionTokens(ctx, d.db, d.Config.Options.Clients, d.TokensDir()); err != nil {
		return err
	}
	if len(d.tokens.Generated) > 0 {
		d.Log.Info("generated client tokens", "clients", strings.Join(d.tokens.Generated, ","), "dir", d.TokensDir())
	}
	if len(d.tokens.Stale) > 0 {
		d.Log.Warn("removed token files another front end's rotation replaced", "clients", strings.Join(d.tokens.Stale, ","), "dir", d.TokensDir())
	}
	methods, err := methodTable()
	if err != nil {
		return err
	}
	// The model router reads the daemon's clock when a test sets one.
	router, err := workers.NewRouter(ctx, d.db, d.Config.Options, d.Now, d.Log)
	if err != nil {
		return err
	}
	sw, err := d.sweeper()
	if err != nil {
		return err
	}
	enc, vectors, err := d.openEncoder()
	if err != nil {
		return err
	}
	srv, err := server.New(d.db, server.Config{
		Version: version.Version, Log: d.Log, Options: d.Config.Options, Sweeper: sw,
		// Budgets measure replies as the transports render them.
		Marshal: gateway.MarshalResult,
		// A reply that is not an MCP one is its JSON: nil says so, and lets
		// the budget size it without marshaling it.
		Carrier: func(ctx context.Context) budget.Carrier {
			if w := gateway.WireFrom(ctx); w.MCP {
				return w
			}
			return nil
		},
		Models:  router,
		Encoder: enc, Vectors: vectors,
		TokensDir: d.TokensDir(), BackupDir: d.BackupDir(), Tools: toolNames(),
	})
	if err != nil {
		return err
	}
	d.srv = srv
	clients := d.tokens.Clients
	var pageToken string
	if d.Config.IngressListen != "" {
		// The page calls the services as a built-in client whose token
		// exists only in this process: never written, never configurable.
		if pageToken, err = server.NewToken(); err != nil {
			return err
		}
		sum := sha256.Sum256([]byte(pageToken))
		clients = append(slices.Clip(clients), auth.Client{Name: page.ClientName, Scopes: []auth.Scope{auth.Read, auth.Admin}, TokenSHA256: sum[:]})
	}
	// Calls over the admin socket are the local admin's, by a token that
	// exists only in this process (adminsock.go).
	local, localToken, err := localAdminClient()
	if err != nil {
		return err
	}
	clients = append(slices.Clip(clients), local)
	in := auth.New(clients, methods)
	in.OnRefuse = srv.AuditRefusal
	logCall, err := accessLog(d.Log)
	if err != nil {
		return err
	}
	in.OnDone = func(ctx context.Context, done auth.Done) {
		logCall(ctx, done)
		srv.ObserveCall(done)
	}
	// An idle gRPC connection is closed as an idle HTTP one is.
	d.grpc = srv.NewGRPC(in, idleTimeout)

	d.conn = srv.NewChannel(in)
	api, err := rest.New(d.conn)
	if err != nil {
		return err
	}
	// The bridge's identity check of a request no tool call vouched for
	// is the server's (Server.CallerCheck).
	mcp, err := mcpbridge.New(d.conn, version.Version, mcpbridge.WithCallerCheck(srv.CallerCheck(in)))
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(healthBody(d.db.Backend(), d.db.Health()))
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("ok\n"))
	})
	mux.Handle("/api/", api)
	openapi, err := openAPI()
	if err != nil {
		return err
	}
	mux.HandleFunc("GET /api/openapi.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(openapi)
	})
	mux.Handle("/mcp", mcp)
	mux.Handle("GET /metrics", metricsHandler(d.conn))

	var tlsConfig *tls.Config
	if d.Config.TLSCert != "" {
		if tlsConfig, err = loadTLS(d.Config.TLSCert, d.Config.TLSKey); err != nil {
			return err
		}
	}
	if d.ln, err = net.Listen("tcp", d.Config.Listen); err != nil {
		return err
	}
	served := stamped(gateway.Boundary(mux))
	d.http = &http.Server{
		Handler: served,
		// A client that never finishes its headers, or an idle keep-alive
		// connection, must not hold a connection (and a goroutine) forever.
		// Bodies have their own deadline (gateway.Boundary).
		ReadHeaderTimeout: d.headerTimeout(),
		IdleTimeout:       idleTimeout,
		ErrorLog:          slog.NewLogLogger(d.Log.Handler(), slog.LevelWarn),
		// Over TLS, gRPC calls are HTTP/2 streams of this server, which
		// grpc.MaxConcurrentStreams and its keepalive do not reach: the
		// same bounds here (docs/operations.md).
		HTTP2: &http.HTTP2Config{
			MaxConcurrentStreams: server.MaxConcurrentStreams,
			SendPingTimeout:      server.KeepaliveTime,
			PingTimeout:          server.KeepaliveTimeout,
		},
	}
	if tlsConfig != nil {
		d.serveTLS(tlsConfig)
	} else {
		d.servePlain()
	}
	d.openAdminSocket(localToken, served)
	// Background work starts once the server serves. The failpoint is
	// for the crash test alone and read only in binaries built with the
	// failpoint tag (see package workers and failpoint_on.go).
	if d.workers, err = workers.New(workers.Config{
		DB: d.db, Options: d.Config.Options, Log: d.Log, Failpoint: failpoint(),
		Models: router, Check: srv.CheckCandidate, Sweeper: sw,
	}); err != nil {
		return err
	}
	// Standing answers are refreshed one per idle poll (docs/design.md R-W3), with
	// the same model router as the other model jobs.
	d.workers.HandleAnswers(&answers.Composer{DB: d.db, Scopes: scope.New(d.Config.Options), Models: router}, answers.DefaultRefresh)
	d.startEmbedder(ctx, enc, vectors)
	if err = d.workers.Start(ctx); err != nil {
		return err
	}
	d.checkStore()
	if d.Config.IngressListen != "" {
		return d.openIngress(pageToken)
	}
	return nil
}

// openStore opens the store: the PostgreSQL database of database_url when
// it is set, else the SQLite file in the data directory, which still
// holds the tokens and options either way (docs/operations.md,
// "PostgreSQL").
func (d *Daemon) openStore(ctx context.Context, opts []storage.Option) (*storage.DB, error) {
	url := d.Config.Options.DatabaseURL
	if url == "" {
		return storage.Open(ctx, filepath.Join(d.Config.DataDir, dbFile), opts...)
	}
	if err := os.MkdirAll(d.Config.DataDir, 0o700); err != nil {
		return nil, err
	}
	d.Log.InfoContext(ctx, "opening the PostgreSQL database", "database", options.RedactDatabaseURL(url))
	db, err := storage.OpenPostgres(ctx, url, opts...)
	if err != nil {
		return nil, fmt.Errorf("database %s: %w", options.RedactDatabaseURL(url), err)
	}
	return db, nil
}

// servePlain serves the port in plain text. One port: a connection that
// opens with HTTP/2's client preface, as every gRPC client's does over
// plain TCP, is served by grpc-go's own transport; any other (HTTP/1.1:
// REST, MCP, health, metrics) by net/http.
func (d *Daemon) servePlain() {
	d.split = cmux.New(d.ln)
	d.split.SetReadTimeout(d.headerTimeout())
	grpcLn, httpLn := d.split.Match(cmux.HTTP2()), d.split.Match(cmux.Any())
	go d.grpc.Serve(grpcLn)
	go func() {
		if err := d.http.Serve(httpLn); err != nil && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, cmux.ErrServerClosed) && !errors.Is(err, net.ErrClosed) {
			d.Log.Error("http serve", "err", err)
		}
	}()
	go d.split.Serve()
}

// serveTLS serves the port over TLS: net/http terminates it and speaks
// HTTP/1.1 or HTTP/2 (ALPN); a gRPC call (HTTP/2, content type
// application/grpc) goes to the same gRPC server, interceptors and all,
// through its HTTP handler, and everything else to REST, MCP, health and
// metrics as in plain text.
func (d *Daemon) serveTLS(cfg *tls.Config) {
	rest := d.http.Handler
	d.http.TLSConfig = cfg
	d.http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor == 2 && strings.HasPrefix(r.Header.Get("Content-Type"), "application/grpc") {
			d.grpc.ServeHTTP(w, r)
			return
		}
		rest.ServeHTTP(w, r)
	})
	go func() {
		if err := d.http.ServeTLS(d.ln, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, net.ErrClosed) {
			d.Log.Error("https serve", "err", err)
		}
	}()
}

// loadTLS reads the certificate chain and key for serve's TLS.
func loadTLS(certFile, keyFile string) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("TLS certificate: %w", err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12, NextProtos: []string{"h2", "http/1.1"}}, nil
}

// Scheme is the port's URL scheme: https with TLS, else http.
func (d *Daemon) Scheme() string {
	if d.Config.TLSCert != "" {
		return "https"
	}
	return "http"
}

// openIngress starts the page's own listener (docs/design.md R-T6, R-P). It serves
// only the Supervisor's ingress proxy and loopback, judged by TCP peer.
func (d *Daemon) openIngress(token string) (err error) {
	allow := d.IngressAllow
	if allow == nil {
		allow = page.IngressAllowed
	}
	api, err := netip.ParseAddrPort(d.ln.Addr().String())
	if err != nil {
		return fmt.Errorf("api address: %w", err)
	}
	o := d.Config.Options
	h := page.New(page.Config{
		Conn: d.conn, Token: token, API: api, Clients: pageClients(o.Clients), TokensDir: d.TokensDir(),
		EmbedURL: o.EmbedURL, EmbedModel: o.EmbedModel, Database: pageDatabase(o.DatabaseURL),
		ReviewAt: o.ReviewAt.String(), AnchorSweepHours: o.AnchorSweepHours,
		Now: d.Now, Log: d.Log, ShowTokens: d.PageShowTokens,
	})
	if d.ingressLn, err = net.Listen("tcp", d.Config.IngressListen); err != nil {
		return fmt.Errorf("ingress listen: %w", err)
	}
	var served http.Handler = h
	if o.PageTokenRequired {
		served = page.RequireToken(d.conn, h)
	}
	d.ingress = &http.Server{
		Handler:           page.Guard(allow, served),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(d.Log.Handler(), slog.LevelWarn),
	}
	go func() {
		if err := d.ingress.Serve(d.ingressLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
			d.Log.Error("ingress serve", "err", err)
		}
	}()
	return nil
}

// pageDatabase is database_url as the page shows it: "" when unset (the
// SQLite file), else without its password.
func pageDatabase(url string) string {
	if url == "" {
		return ""
	}
	return options.RedactDatabaseURL(url)
}

// accessLog returns the interceptor's OnDone: one structured line per call
// at info level — the tool, the client, the transport, the outcome code and
// the duration — never arguments, queries, results or tokens. The identity
// check the MCP bridge makes before each request (memory_whoami over MCP)
// is logged at debug level when it passes, so an MCP call reads as one line;
// a refused one is the refusal the caller sees, and stays at info.
func accessLog(log *slog.Logger) (func(context.Context, auth.Done), error) {
	routes, err := gateway.Routes()
	if err != nil {
		return nil, err
	}
	tools := make(map[string]string, len(routes))
	for _, r := range routes {
		tools[r.FullMethod()] = r.Tool.GetName()
	}
	whoami := hearthv1.AdminService_Whoami_FullMethodName
	return func(ctx context.Context, d auth.Done) {
		via := "grpc"
		if p, ok := peer.FromContext(ctx); ok && p.Addr != nil && p.Addr.Network() == auth.InProcessNetwork {
			via = "rest"
			if gateway.WireFrom(ctx).MCP {
				via = "mcp"
			}
		}
		client := d.Client
		if client == "" {
			client = "-"
		}
		level := slog.LevelInfo
		if d.Method == whoami && via == "mcp" && d.Code == codes.OK {
			level = slog.LevelDebug
		}
		log.Log(ctx, level, "call", "tool", tools[d.Method], "client", client, "via", via,
			"code", gateway.CodeName(d.Code), "ms", float64(d.Duration.Microseconds())/1000)
	}, nil
}

// openAPI returns the REST API's OpenAPI document, generated from the protos,
// with this build's version stamped in (R-T8). It is public, like the protos
// it comes from.
func openAPI() ([]byte, error) {
	var doc map[string]any
	if err := json.Unmarshal(hearthv1.OpenAPI, &doc); err != nil {
		return nil, fmt.Errorf("openapi: %w", err)
	}
	info, _ := doc["info"].(map[string]any)
	if info == nil {
		return nil, fmt.Errorf("openapi: no info object")
	}
	info["version"] = version.Version
	return json.Marshal(doc)
}

// methodTable returns the interceptor's method table, built from the same
// walk over the descriptors as the REST routes and the MCP tools.
func methodTable() (map[string]auth.Scope, error) {
	routes, err := gateway.Routes()
	if err != nil {
		return nil, err
	}
	rpcs := make(map[string]hearthv1.Scope, len(routes))
	for _, r := range routes {
		rpcs[r.FullMethod()] = r.Scope()
	}
	return auth.Table(rpcs)
}

// pageClients copies the configured clients for the page.
func pageClients(cs []options.Client) []page.Client {
	out := make([]page.Client, 0, len(cs))
	for _, c := range cs {
		pc := page.Client{Name: c.Name, IP: c.IP, Supplied: c.Kind() == options.KindSupplied}
		for _, s := range c.Scopes {
			pc.Scopes = append(pc.Scopes, string(s))
		}
		out = append(out, pc)
	}
	return out
}

// IngressAddr returns the address the page listens on, or "" when off.
func (d *Daemon) IngressAddr() string {
	if d.ingressLn == nil {
		return ""
	}
	return d.ingressLn.Addr().String()
}

// stamped stamps the version on every HTTP reply.
func stamped(h http.Handler) http.Handler {
	server := "hearth/" + version.Version
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Server", server)
		h.ServeHTTP(w, r)
	})
}

// Addr returns the address the daemon listens on.
func (d *Daemon) Addr() string { return d.ln.Addr().String() }

// TokensDir is where generated client tokens are written.
func (d *Daemon) TokensDir() string { return filepath.Join(d.Config.DataDir, "tokens") }

// Close refuses new calls with UNAVAILABLE, lets calls in flight finish
// until ctx ends, stops listening and closes the store.
func (d *Daemon) Close(ctx context.Context) error {
	var errs []error
	// New calls are refused (UNAVAILABLE) while those in flight finish:
	// every write a caller saw succeed is committed before the store closes.
	if d.srv != nil {
		if err := d.srv.Drain(ctx); err != nil {
			errs = append(errs, fmt.Errorf("drain: %w", err))
		}
	}
	// Past ctx's deadline, connections still open are closed outright.
	for name, srv := range map[string]*http.Server{"ingress": d.ingress, "http": d.http, "admin socket": d.admin} {
		if srv == nil {
			continue
		}
		if err := srv.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
			srv.Close()
		}
	}
	if d.split != nil {
		d.split.Close()
	}
	if d.grpc != nil {
		stopped := make(chan struct{})
		go func() {
			d.grpc.GracefulStop()
			close(stopped)
		}()
		select {
		case <-stopped:
		case <-ctx.Done():
			d.grpc.Stop()
			<-stopped
		}
	}
	if d.checkStop != nil {
		d.checkStop()
		<-d.checked
	}
	if d.workers != nil {
		d.workers.Stop()
	}
	if d.embedder != nil {
		d.embedder.Stop()
	}
	if d.srv != nil {
		if err := d.srv.Close(ctx); err != nil {
			errs = append(errs, fmt.Errorf("server: %w", err))
		}
	}
	if d.db != nil {
		if err := d.db.Close(); err != nil {
			errs = append(errs, fmt.Errorf("storage: %w", err))
		}
	}
	return errors.Join(errs...)
}

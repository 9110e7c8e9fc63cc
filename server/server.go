// Package server implements Hearth's gRPC services over storage. Each
// handler has the shape validate → screen → store → map error: a pure check
// of the request naming the field at fault, the screen for every value that
// will be persisted, one storage call, and toStatus for the one mapping from
// domain errors to gRPC codes. Authorization happened before any handler ran,
// in the interceptor of package auth.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"time"

	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
	"github.com/hearth-memory/hearth/server/auth"
	"github.com/hearth-memory/hearth/server/budget"
	"github.com/hearth-memory/hearth/server/encoder"
	"github.com/hearth-memory/hearth/server/inproc"
	"github.com/hearth-memory/hearth/server/models"
	"github.com/hearth-memory/hearth/server/options"
	"github.com/hearth-memory/hearth/server/rerank"
	"github.com/hearth-memory/hearth/server/retrieval"
	"github.com/hearth-memory/hearth/server/scope"
	"github.com/hearth-memory/hearth/server/sweep"
	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/screen"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// MaxMessageBytes limits gRPC messages, as the HTTP boundary limits bodies (R-Q3).
const MaxMessageBytes = 1 << 20

// Config is what the services need beyond the store.
type Config struct {
	Version string
	Log     *slog.Logger
	Options options.Options
	// Marshal renders a response as its caller receives it (the transports'
	// shared JSON); budgets measure with it. Required.
	Marshal func(proto.Message) ([]byte, error)
	// Carrier says how the reply to the call in ctx travels, for the budget
	// measured on the bytes sent (R-B1); nil, or a nil result, is the JSON
	// itself.
	Carrier func(ctx context.Context) budget.Carrier
	// Models is the model router whose servers memory_status reports; nil
	// means none is configured.
	Models *models.Router
	// Sweeper checks entity anchors for memory_anchor_sweep; nil means no
	// Home Assistant.
	Sweeper *sweep.Sweeper
	// Encoder and Vectors, when the encoder is configured, add the cosine
	// list to search and context packets (R-K3) and report the encoder in
	// memory_status; nil for full text only.
	Encoder *encoder.Encoder
	Vectors *retrieval.Index
	// TokensDir holds the generated client tokens, one file per client
	// (token rotation writes there); BackupDir is where memory_backup
	// writes. Both lie in the data directory.
	TokensDir, BackupDir string
	// Tools maps full gRPC method names to tool names: the closed set of
	// the metrics' tool label.
	Tools map[string]string
}

// Server implements every hearth.v1 service.
type Server struct {
	db      *storage.DB
	log     *slog.Logger
	version string
	opts    options.Options
	// scopes resolves namespaces and scope chains; built once from opts.
	scopes *scope.Resolver
	// size measures responses for their budgets; carrier says how a
	// reply travels.
	size    *budget.Sizer
	carrier func(ctx context.Context) budget.Carrier
	// pipeline ranks searches and context packets.
	pipeline *retrieval.Pipeline
	// models is the model router (nil: none configured).
	models *models.Router
	// sweeper checks entity anchors against Home Assistant.
	sweeper *sweep.Sweeper
	// encoder and vectors are nil without an encoder.
	encoder *encoder.Encoder
	vectors *retrieval.Index
	// reranker is the rerank stage of abstaining searches (relevance.go);
	// not Configured without rerank_url.
	reranker *rerank.Reranker
	// ops: token rotation, backups, coalesced refusals and metrics
	// (ops.go).
	ops ops
	// gate refuses new calls once the server drains (drain.go).
	gate gate
}

// New returns a Server over db. It fails without cfg.Marshal.
func New(db *storage.DB, cfg Config) (*Server, error) {
	log := cfg.Log
	if log == nil {
		log = slog.Default()
	}
	size, err := budget.NewSizer(cfg.Marshal)
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	carrier := cfg.Carrier
	if carrier == nil {
		carrier = func(context.Context) budget.Carrier { return nil }
	}
	sw := cfg.Sweeper
	if sw == nil {
		sw = sweep.New(nil)
	}
	s := &Server{db: db, log: log, version: cfg.Version, opts: cfg.Options, scopes: scope.New(cfg.Options),
		size: size, carrier: carrier, pipeline: retrieval.New(db), models: cfg.Models, sweeper: sw}
	if cfg.Encoder != nil && cfg.Encoder.Configured() && cfg.Vectors != nil {
		s.encoder, s.vectors = cfg.Encoder, cfg.Vectors
		s.pipeline = retrieval.New(db, retrieval.Cosine{DB: db, Encoder: cfg.Encoder, Index: cfg.Vectors})
	}
	if s.reranker, err = rerank.New(rerank.FromOptions(cfg.Options)); err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	if err := s.initOps(cfg); err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	return s, nil
}

// NewGRPC returns a grpc.Server with the authorization interceptor and,
// behind it, the gate that Drain closes; the message size limit, the
// bounds on streams and the keepalive policy (streams.go; a connection
// without calls for idle is closed), every hearth.v1 service, health and
// reflection; opts come after those.
func (s *Server) NewGRPC(in *auth.Interceptor, idle time.Duration, opts ...grpc.ServerOption) *grpc.Server {
	s.useInterceptor(in)
	base := append([]grpc.ServerOption{
		grpc.ChainUnaryInterceptor(s.unary(in)...),
		grpc.ChainStreamInterceptor(in.Stream, s.ops.streams.intercept),
		grpc.MaxRecvMsgSize(MaxMessageBytes),
		// Calls run on goroutines kept between calls: a new goroutine per
		// call grows its stack anew through the handler chain and SQLite
		// on every call. Past this many at once, a call gets its own.
		grpc.NumStreamWorkers(streamWorkers()),
	}, streamOptions(idle)...)
	g := grpc.NewServer(append(base, opts...)...)
	s.register(g)
	hs := health.NewServer()
	hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(g, hs)
	reflection.Register(g)
	return g
}

// NewChannel returns the in-process channel the gateway, the MCP bridge,
// the page and the metrics handler call the services through: the same
// services as NewGRPC's server, behind the same interceptors in the same
// order, with the same message limit. Health and reflection are for gRPC
// clients and stay on the server.
func (s *Server) NewChannel(in *auth.Interceptor) *inproc.Channel {
	s.useInterceptor(in)
	c := inproc.New(MaxMessageBytes, s.unary(in)...)
	s.register(c)
	return c
}

// unary is the chain every unary call passes, over either transport:
// authorization (in), then the drain gate, then withhold (a caller without
// read scope gets no record content back).
func (s *Server) unary(in *auth.Interceptor) []grpc.UnaryServerInterceptor {
	return []grpc.UnaryServerInterceptor{in.Unary, s.gate.unary, withhold}
}

// register registers the API's services on r.
func (s *Server) register(r grpc.ServiceRegistrar) {
	hearthv1.RegisterMemoryServiceServer(r, &memoryService{Server: s})
	hearthv1.RegisterAdminServiceServer(r, &adminService{Server: s})
	hearthv1.RegisterSessionServiceServer(r, &sessionService{Server: s})
	hearthv1.RegisterAnswerServiceServer(r, &answerService{Server: s})
	hearthv1.RegisterAnchorServiceServer(r, &anchorService{Server: s})
	hearthv1.RegisterCaptureServiceServer(r, &captureService{Server: s})
}

// streamWorkers is how many goroutines serve calls, kept between calls: a
// few per core, so that calls waiting on the store do not send the next
// ones to fresh goroutines.
func streamWorkers() uint32 { return uint32(4 * runtime.GOMAXPROCS(0)) }

// AuditRefusal writes an authorization refusal to the audit. It is the
// interceptor's OnRefuse hook. A call without a valid token is coalesced
// with the others of its source and reason in the same minute, and a known
// client's call out of its scope with the others of its client and method
// (refusals.go); any other refusal (a method without a scope) is written
// at once.
func (s *Server) AuditRefusal(ctx context.Context, r auth.Denial) {
	switch {
	case r.Code == codes.Unauthenticated:
		s.ops.refusals.add(ctx, r)
	case r.Client != "":
		s.ops.scopeRefusals.add(ctx, r)
	default:
		s.refuse(ctx, storage.RefusalEntry{Client: r.Client, Action: storage.ActionRefuseAuth, Detail: r.Method + ": " + r.Reason})
	}
}

// refuse audits a refusal: the one way the server writes one. The row is
// written even when the call's context is done, and a failure to write it
// is logged, not returned: the refusal stands either way.
func (s *Server) refuse(ctx context.Context, r storage.RefusalEntry) {
	if err := s.db.Refuse(context.WithoutCancel(ctx), r); err != nil {
		s.log.ErrorContext(ctx, "audit refusal", "err", err)
	}
}

// writer returns the authenticated token client that may write, or an error.
// Only a token client writes; its name is the record's writer (R-A5).
func writer(ctx context.Context) (string, error) {
	c, ok := auth.FromContext(ctx)
	if !ok || !c.ByToken {
		return "", status.Error(codes.PermissionDenied, "permission denied: only a token client writes")
	}
	return c.Name, nil
}

// client returns the authenticated client's name for the audit.
func client(ctx context.Context) string {
	if c, ok := auth.FromContext(ctx); ok {
		return c.Name
	}
	return "-"
}

// fail audits a refusal that the request itself earned (a screened value, a
// revision conflict) against namespace ns and record id (either may be
// empty), and maps err to a gRPC status. Other errors are only mapped.
func (s *Server) fail(ctx context.Context, ns, id string, err error) error {
	r := storage.RefusalEntry{Client: client(ctx), Namespace: ns, RecordID: id}
	var ref *screen.Refusal
	switch {
	case errors.As(err, &ref):
		r.Action, r.Field, r.Pattern = storage.ActionRefuseScreen, ref.Field, ref.Pattern
	case storage.ErrorCode(err) == storage.Conflict:
		r.Action, r.Detail = storage.ActionRefuseConflict, "stale revision"
	default:
		return toStatus(ctx, s.log, err)
	}
	s.refuse(ctx, r)
	return toStatus(ctx, s.log, err)
}

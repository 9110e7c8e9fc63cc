package inproc_test

import (
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hearth-memory/hearth/server/inproc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/proto"
)

// probe is a service whose Check does what its request's service field
// names and notes what its context held.
type probe struct {
	healthpb.UnimplementedHealthServer

	mu   sync.Mutex
	seen seen
	// started is signalled when a "wait" call has begun.
	started chan struct{}
	// kept is the last response Check returned, to see a caller's change to
	// its reply reach it or not.
	kept *healthpb.HealthCheckResponse
}

// seen is what one call's handler found in its context.
type seen struct {
	method      string
	auth, xff   []string
	network     string
	hasDeadline bool
	deadline    time.Time
	value       any
	order       []string
}

type valueKey struct{}

func (p *probe) Check(ctx context.Context, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	s := seen{value: ctx.Value(valueKey{})}
	s.method, _ = grpc.Method(ctx)
	s.auth = metadata.ValueFromIncomingContext(ctx, "authorization")
	s.xff = metadata.ValueFromIncomingContext(ctx, "x-forwarded-for")
	if pr, ok := peer.FromContext(ctx); ok && pr.Addr != nil {
		s.network = pr.Addr.Network()
	}
	s.deadline, s.hasDeadline = ctx.Deadline()
	s.order = slices.Clone(orderFrom(ctx))
	p.mu.Lock()
	p.seen = s
	p.mu.Unlock()

	switch req.GetService() {
	case "headers":
		if err := grpc.SetHeader(ctx, metadata.Pairs("h", "1")); err != nil {
			return nil, err
		}
		if err := grpc.SetTrailer(ctx, metadata.Pairs("t", "2")); err != nil {
			return nil, err
		}
	case "plain-error":
		return nil, errors.New("boom")
	case "status":
		st, err := status.New(codes.NotFound, "gone").WithDetails(&healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_NOT_SERVING})
		if err != nil {
			return nil, err
		}
		return nil, st.Err()
	case "wait":
		p.started <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	}
	resp := &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}
	p.mu.Lock()
	p.kept = resp
	p.mu.Unlock()
	return resp, nil
}

func (p *probe) last() seen {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.seen
}

// order interceptors note their names in the context, outermost first.
type orderKey struct{}

func orderFrom(ctx context.Context) []string {
	o, _ := ctx.Value(orderKey{}).([]string)
	return o
}

func named(name string) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if info.FullMethod != healthpb.Health_Check_FullMethodName {
			return nil, status.Errorf(codes.Internal, "interceptor %s saw method %q", name, info.FullMethod)
		}
		return h(context.WithValue(ctx, orderKey{}, append(slices.Clip(orderFrom(ctx)), name)), req)
	}
}

const maxRecv = 1 << 10

// transports returns the probe served by grpc-go over an in-memory
// listener ("grpc") and by a Channel ("inproc"), with the same interceptors
// and limit.
func transports(t testing.TB) (map[string]grpc.ClientConnInterface, *probe) {
	p := &probe{started: make(chan struct{}, 1)}
	is := []grpc.UnaryServerInterceptor{named("a"), named("b")}

	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(is...), grpc.MaxRecvMsgSize(maxRecv))
	healthpb.RegisterHealthServer(srv, p)
	lis := bufconn.Listen(1 << 20)
	go srv.Serve(lis)
	conn, err := grpc.NewClient("passthrough:///bufconn",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn.Close()
		srv.Stop()
	})

	ch := inproc.New(maxRecv, is...)
	healthpb.RegisterHealthServer(ch, p)
	return map[string]grpc.ClientConnInterface{"grpc": conn, "inproc": ch}, p
}

// TestChannel_AsGRPC holds the Channel to what a call over grpc-go's own
// transport sees and returns, case by case, on both.
func TestChannel_AsGRPC(t *testing.T) {
	t.Parallel()
	conns, p := transports(t)
	md := metadata.Pairs("authorization", "Bearer x", "x-forwarded-for", "192.0.2.7")
	for name, conn := range conns {
		client := healthpb.NewHealthClient(conn)
		call := func(service string, opts ...grpc.CallOption) (*healthpb.HealthCheckResponse, error) {
			ctx := metadata.NewOutgoingContext(context.WithValue(t.Context(), valueKey{}, "caller's"), md)
			return client.Check(ctx, &healthpb.HealthCheckRequest{Service: service}, opts...)
		}
		t.Run(name+"/Context", func(t *testing.T) {
			resp, err := call("")
			if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
				t.Fatalf("Check = %v, %v", resp, err)
			}
			s := p.last()
			if s.method != healthpb.Health_Check_FullMethodName {
				t.Errorf("grpc.Method = %q", s.method)
			}
			if !slices.Equal(s.auth, []string{"Bearer x"}) || !slices.Equal(s.xff, []string{"192.0.2.7"}) {
				t.Errorf("incoming metadata: authorization %q, x-forwarded-for %q", s.auth, s.xff)
			}
			if s.value != nil {
				t.Errorf("the handler saw the caller's context value %v", s.value)
			}
			if s.hasDeadline {
				t.Errorf("deadline %v on a call without one", s.deadline)
			}
			if !slices.Equal(s.order, []string{"a", "b"}) {
				t.Errorf("interceptors ran %q, want [a b]", s.order)
			}
			want := map[string]string{"grpc": "bufconn", "inproc": inproc.Network}[name]
			if s.network != want {
				t.Errorf("peer network = %q, want %q", s.network, want)
			}
		})
		t.Run(name+"/Deadline", func(t *testing.T) {
			deadline := time.Now().Add(time.Hour)
			ctx, cancel := context.WithDeadline(t.Context(), deadline)
			defer cancel()
			if _, err := client.Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
				t.Fatal(err)
			}
			// grpc-go sends the time left, so its server's deadline moves by
			// the time the call took; the channel keeps the caller's.
			if s := p.last(); !s.hasDeadline || s.deadline.Sub(deadline).Abs() > time.Second {
				t.Errorf("handler deadline %v (set %v), want %v", s.deadline, s.hasDeadline, deadline)
			}
		})
		t.Run(name+"/Headers", func(t *testing.T) {
			var header, trailer metadata.MD
			if _, err := call("headers", grpc.Header(&header), grpc.Trailer(&trailer)); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(header.Get("h"), []string{"1"}) || !slices.Equal(trailer.Get("t"), []string{"2"}) {
				t.Errorf("header %v, trailer %v", header, trailer)
			}
		})
		for _, tc := range []struct {
			service string
			code    codes.Code
			message string
			details int
		}{
			{"plain-error", codes.Unknown, "boom", 0},
			{"status", codes.NotFound, "gone", 1},
		} {
			t.Run(name+"/Error/"+tc.service, func(t *testing.T) {
				_, err := call(tc.service)
				st, ok := status.FromError(err)
				if !ok || st.Code() != tc.code || st.Message() != tc.message || len(st.Details()) != tc.details {
					t.Fatalf("error %v, want %v %q with %d details", err, tc.code, tc.message, tc.details)
				}
				if tc.details > 0 {
					d, _ := st.Details()[0].(*healthpb.HealthCheckResponse)
					if d.GetStatus() != healthpb.HealthCheckResponse_NOT_SERVING {
						t.Errorf("detail = %v", st.Details()[0])
					}
				}
			})
		}
		t.Run(name+"/Canceled", func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			go func() {
				<-p.started
				cancel()
			}()
			_, err := client.Check(ctx, &healthpb.HealthCheckRequest{Service: "wait"})
			if status.Code(err) != codes.Canceled {
				t.Errorf("error %v, want Canceled", err)
			}
		})
		t.Run(name+"/DeadlineExceeded", func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
			defer cancel()
			go func() { <-p.started }()
			_, err := client.Check(ctx, &healthpb.HealthCheckRequest{Service: "wait"})
			if status.Code(err) != codes.DeadlineExceeded {
				t.Errorf("error %v, want DeadlineExceeded", err)
			}
		})
		t.Run(name+"/TooLarge", func(t *testing.T) {
			_, err := call(strings.Repeat("x", maxRecv))
			if status.Code(err) != codes.ResourceExhausted {
				t.Errorf("error %v, want ResourceExhausted", err)
			}
			if _, err := call(strings.Repeat("x", maxRecv-10)); err != nil {
				t.Errorf("a request within the limit: %v", err)
			}
		})
		t.Run(name+"/Unknown", func(t *testing.T) {
			err := conn.Invoke(t.Context(), "/grpc.health.v1.Health/Nope", &healthpb.HealthCheckRequest{}, &healthpb.HealthCheckResponse{})
			if status.Code(err) != codes.Unimplemented {
				t.Errorf("error %v, want Unimplemented", err)
			}
		})
	}
}

// TestChannel_Copies holds that neither side of a call keeps the other's
// message: the handler gets a copy of the request and the caller a copy of
// the response.
func TestChannel_Copies(t *testing.T) {
	t.Parallel()
	p := &probe{started: make(chan struct{}, 1)}
	var got *healthpb.HealthCheckRequest
	ch := inproc.New(maxRecv, func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		got = req.(*healthpb.HealthCheckRequest)
		return h(ctx, req)
	})
	healthpb.RegisterHealthServer(ch, p)
	req := &healthpb.HealthCheckRequest{Service: "a"}
	reply := &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVICE_UNKNOWN}
	if err := ch.Invoke(t.Context(), healthpb.Health_Check_FullMethodName, req, reply); err != nil {
		t.Fatal(err)
	}
	if got == req || !proto.Equal(got, req) {
		t.Errorf("handler's request %v is the caller's (%v) or differs from it", got, got == req)
	}
	if reply == p.kept || reply.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("reply %v is the handler's message (%v) or not its copy", reply, reply == p.kept)
	}
	reply.Status = healthpb.HealthCheckResponse_NOT_SERVING
	if p.kept.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Error("changing the reply changed the handler's message")
	}
}

// TestChannel_Streams holds that a streaming call is refused, not hung.
func TestChannel_Streams(t *testing.T) {
	t.Parallel()
	ch := inproc.New(maxRecv)
	healthpb.RegisterHealthServer(ch, &probe{})
	_, err := healthpb.NewHealthClient(ch).Watch(t.Context(), &healthpb.HealthCheckRequest{})
	if status.Code(err) != codes.Unimplemented {
		t.Errorf("Watch: %v, want Unimplemented", err)
	}
}

// TestChannel_Register holds RegisterService to grpc.Server's refusals.
func TestChannel_Register(t *testing.T) {
	t.Parallel()
	for name, register := range map[string]func(ch *inproc.Channel){
		"WrongImplementation": func(ch *inproc.Channel) { ch.RegisterService(&healthpb.Health_ServiceDesc, struct{}{}) },
		"Twice": func(ch *inproc.Channel) {
			healthpb.RegisterHealthServer(ch, &probe{})
			healthpb.RegisterHealthServer(ch, &probe{})
		},
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("no panic")
				}
			}()
			register(inproc.New(maxRecv))
		})
	}
}

// BenchmarkInvoke measures one unary call with metadata, through grpc-go
// over an in-memory listener (what the gateway and the bridge used before
// the channel) and through the Channel, behind the same two interceptors.
func BenchmarkInvoke(b *testing.B) {
	conns, _ := transports(b)
	ctx := metadata.NewOutgoingContext(b.Context(), metadata.Pairs("authorization", "Bearer x", "x-forwarded-for", "192.0.2.7"))
	for _, name := range []string{"grpc", "inproc"} {
		client := healthpb.NewHealthClient(conns[name])
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if _, err := client.Check(ctx, &healthpb.HealthCheckRequest{Service: "github/acme/api"}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// Package inproc calls the daemon's gRPC services from inside its own
// process: the REST gateway, the MCP bridge, the page and the metrics
// handler hold a Channel where a client connection would be, and each of
// their calls runs the same interceptor chain and the same handler as a
// call over the network, with none of HTTP/2's framing, the message's
// encoding to bytes and back, or the hop between goroutines on either side.
//
// A call sees what a call over grpc-go's transport sees: the caller's
// outgoing metadata as incoming metadata, the caller's deadline and
// cancellation but none of its context's values, a peer whose network is
// Network, the method's name (grpc.Method), headers and trailers set with
// grpc.SetHeader and grpc.SetTrailer returned to grpc.Header and
// grpc.Trailer call options, the message size limit, and an error that is
// always a status: one that is not becomes codes.Unknown, or Canceled or
// DeadlineExceeded for the context's errors, as grpc-go's server sends it.
// Request and reply are copied (proto.Merge), so neither side keeps a
// message the other still holds. Only unary methods are served: every RPC
// of the API is unary.
package inproc

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// Network is the network name of a call's peer on a Channel. A server
// that trusts forwarded metadata only from the gateway and the bridge
// tells their calls by it.
const Network = "inproc"

// Channel is a gRPC client connection to services in the same process. Its
// services are registered on it (it is a grpc.ServiceRegistrar) as on a
// grpc.Server; it serves their unary methods to Invoke.
type Channel struct {
	interceptor grpc.UnaryServerInterceptor
	maxRecv     int

	mu      sync.RWMutex
	methods map[string]method
}

// method is a registered unary method: its handler and the service
// implementation it is called on.
type method struct {
	impl    any
	handler grpc.MethodHandler
}

var (
	_ grpc.ClientConnInterface = (*Channel)(nil)
	_ grpc.ServiceRegistrar    = (*Channel)(nil)
)

// New returns a Channel whose calls pass through interceptors, in order,
// as grpc.ChainUnaryInterceptor's would on a server, and whose requests
// are refused with ResourceExhausted past maxRecv bytes (encoded), as
// grpc.MaxRecvMsgSize refuses them.
func New(maxRecv int, interceptors ...grpc.UnaryServerInterceptor) *Channel {
	return &Channel{interceptor: chain(interceptors), maxRecv: maxRecv, methods: map[string]method{}}
}

// RegisterService registers the unary methods of a service implementation,
// as grpc.Server.RegisterService does. It panics, as grpc.Server does, when
// impl does not implement the service or a method is registered twice.
func (c *Channel) RegisterService(sd *grpc.ServiceDesc, impl any) {
	if impl != nil && sd.HandlerType != nil {
		ht := reflect.TypeOf(sd.HandlerType).Elem()
		if !reflect.TypeOf(impl).Implements(ht) {
			panic(fmt.Sprintf("inproc: RegisterService found the handler of type %T that does not satisfy %v", impl, ht))
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range sd.Methods {
		name := "/" + sd.ServiceName + "/" + m.MethodName
		if _, ok := c.methods[name]; ok {
			panic("inproc: method registered twice: " + name)
		}
		c.methods[name] = method{impl: impl, handler: m.Handler}
	}
}

// Invoke calls the unary method named fullMethod ("/package.Service/Method")
// with args and fills reply with its response.
func (c *Channel) Invoke(ctx context.Context, fullMethod string, args, reply any, opts ...grpc.CallOption) error {
	c.mu.RLock()
	m, ok := c.methods[fullMethod]
	c.mu.RUnlock()
	if !ok {
		return status.Errorf(codes.Unimplemented, "unknown method %s", fullMethod)
	}
	in, ok := args.(proto.Message)
	if !ok {
		return status.Errorf(codes.Internal, "inproc: request of type %T is not a proto message", args)
	}
	out, ok := reply.(proto.Message)
	if !ok {
		return status.Errorf(codes.Internal, "inproc: reply of type %T is not a proto message", reply)
	}
	if err := ctx.Err(); err != nil {
		return status.FromContextError(err).Err()
	}
	if n := proto.Size(in); n > c.maxRecv {
		return status.Errorf(codes.ResourceExhausted, "grpc: received message larger than max (%d vs. %d)", n, c.maxRecv)
	}

	// The server's context: the caller's deadline and cancellation, none of
	// its values, the caller's metadata as incoming.
	sctx, cancel := serverContext(ctx)
	defer cancel()
	md, _ := metadata.FromOutgoingContext(ctx)
	sctx = metadata.NewIncomingContext(sctx, md)
	sctx = peer.NewContext(sctx, &peer.Peer{Addr: addr{}, LocalAddr: addr{}})
	st := &stream{method: fullMethod}
	sctx = grpc.NewContextWithServerTransportStream(sctx, st)

	dec := func(v any) error {
		msg, ok := v.(proto.Message)
		if !ok {
			return status.Errorf(codes.Internal, "inproc: request of type %T is not a proto message", v)
		}
		proto.Merge(msg, in)
		return nil
	}
	resp, err := m.handler(m.impl, sctx, dec, c.interceptor)
	st.deliver(opts)
	if err != nil {
		return toStatus(err)
	}
	msg, ok := resp.(proto.Message)
	if !ok {
		return status.Errorf(codes.Internal, "inproc: response of type %T is not a proto message", resp)
	}
	proto.Reset(out)
	proto.Merge(out, msg)
	return nil
}

// NewStream refuses: the Channel serves unary methods only.
func (c *Channel) NewStream(_ context.Context, _ *grpc.StreamDesc, fullMethod string, _ ...grpc.CallOption) (grpc.ClientStream, error) {
	return nil, status.Errorf(codes.Unimplemented, "inproc: streaming method %s is not served in process", fullMethod)
}

// toStatus is the error the caller receives for the handler's err, as
// grpc-go's server makes it: a status stays what it is; another error is
// Canceled or DeadlineExceeded for the context's errors and Unknown with
// its text otherwise.
func toStatus(err error) error {
	if s, ok := status.FromError(err); ok {
		return s.Err()
	}
	return status.FromContextError(err).Err()
}

// serverContext returns a context with ctx's deadline, cancelled when ctx
// is, and without ctx's values: the handler sees only what a call over the
// network carries.
func serverContext(ctx context.Context) (context.Context, context.CancelFunc) {
	sctx, cancel := context.WithCancel(context.Background())
	if d, ok := ctx.Deadline(); ok {
		var cancelDeadline context.CancelFunc
		sctx, cancelDeadline = context.WithDeadline(sctx, d)
		cancel = join(cancelDeadline, cancel)
	}
	if ctx.Done() == nil {
		return sctx, cancel
	}
	// A deadline passed ends sctx by its own timer, as DeadlineExceeded;
	// anything else that ends ctx cancels it.
	stop := context.AfterFunc(ctx, func() {
		if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			cancel()
		}
	})
	return sctx, func() {
		stop()
		cancel()
	}
}

func join(a, b context.CancelFunc) context.CancelFunc {
	return func() {
		a()
		b()
	}
}

// chain makes one interceptor of several, the first outermost.
func chain(is []grpc.UnaryServerInterceptor) grpc.UnaryServerInterceptor {
	switch len(is) {
	case 0:
		return nil
	case 1:
		return is[0]
	}
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		return is[0](ctx, req, info, next(is[1:], info, handler))
	}
}

// next is the handler that runs the interceptors is, then handler.
func next(is []grpc.UnaryServerInterceptor, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) grpc.UnaryHandler {
	if len(is) == 0 {
		return handler
	}
	return func(ctx context.Context, req any) (any, error) {
		return is[0](ctx, req, info, next(is[1:], info, handler))
	}
}

// addr is the address of both ends of an in-process call.
type addr struct{}

func (addr) Network() string { return Network }
func (addr) String() string  { return Network }

// stream is the call's grpc.ServerTransportStream: it names the method and
// keeps the headers and trailers the handler sets, for the caller's
// grpc.Header and grpc.Trailer options.
type stream struct {
	method string

	mu      sync.Mutex
	header  metadata.MD
	trailer metadata.MD
}

func (s *stream) Method() string { return s.method }

func (s *stream) SetHeader(md metadata.MD) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.header = metadata.Join(s.header, md)
	return nil
}

func (s *stream) SendHeader(md metadata.MD) error { return s.SetHeader(md) }

func (s *stream) SetTrailer(md metadata.MD) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.trailer = metadata.Join(s.trailer, md)
	return nil
}

// deliver fills the caller's grpc.Header and grpc.Trailer options.
func (s *stream) deliver(opts []grpc.CallOption) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, o := range opts {
		switch o := o.(type) {
		case grpc.HeaderCallOption:
			*o.HeaderAddr = s.header.Copy()
		case grpc.TrailerCallOption:
			*o.TrailerAddr = s.trailer.Copy()
		}
	}
}

// Package gatewaytest provides a stand-in gRPC backend for testing the REST
// gateway and the MCP bridge on their own: a real grpc.Server on an in-memory
// listener that answers every hearth.v1 method with what the test asks for
// and records the metadata each call arrived with.
//
// It tests transport behaviour only (metadata forwarding, error rendering,
// REST and MCP parity). Hearth's behaviour is tested against the real server
// and real storage elsewhere.
package gatewaytest

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/dynamicpb"

	// Registers the hearth.v1 descriptors the backend looks methods up in.
	_ "github.com/hearth-memory/hearth/gen/hearth/v1"
)

// Responder answers one call: method is the full gRPC method name, e.g.
// /hearth.v1.MemoryService/Store. A nil response with a nil error answers
// the empty response message.
type Responder func(method string, req proto.Message) (proto.Message, error)

// Call is one call the backend received.
type Call struct {
	// Method is the full gRPC method name.
	Method string
	// Request is the decoded request.
	Request proto.Message
	// Metadata is the incoming metadata.
	Metadata metadata.MD
	// Peer is the caller's address as the server saw it (network "bufconn").
	Peer net.Addr
}

// Backend is a gRPC server on a bufconn listener and a client connection to
// it, the way the daemon connects the gateway and the bridge to its server.
type Backend struct {
	// Conn is a client connection to the backend.
	Conn *grpc.ClientConn

	mu      sync.Mutex
	respond Responder
	calls   []Call
}

// New starts a backend that answers with respond (nil: empty responses) and
// stops it when the test ends.
func New(tb testing.TB, respond Responder) *Backend {
	tb.Helper()
	b := &Backend{respond: respond}
	lis := bufconn.Listen(1 << 20)
	srv := grpc.NewServer(grpc.UnknownServiceHandler(b.handle))
	go func() { _ = srv.Serve(lis) }()
	conn, err := grpc.NewClient("passthrough:///inproc",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
	)
	if err != nil {
		tb.Fatalf("gatewaytest: dial: %v", err)
	}
	b.Conn = conn
	tb.Cleanup(func() {
		_ = conn.Close()
		srv.Stop()
	})
	return b
}

// SetResponder replaces the function that answers calls.
func (b *Backend) SetResponder(respond Responder) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.respond = respond
}

// Calls returns the calls received so far, oldest first.
func (b *Backend) Calls() []Call {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]Call(nil), b.calls...)
}

// handle serves every method of every service: it finds the method in the
// registered descriptors, so new RPCs need no change here.
func (b *Backend) handle(_ any, stream grpc.ServerStream) error {
	fullMethod, _ := grpc.MethodFromServerStream(stream)
	md, err := lookup(fullMethod)
	if err != nil {
		return err
	}
	req := newMessage(md.Input())
	if err := stream.RecvMsg(req); err != nil {
		return err
	}
	call := Call{Method: fullMethod, Request: req}
	call.Metadata, _ = metadata.FromIncomingContext(stream.Context())
	if p, ok := peer.FromContext(stream.Context()); ok {
		call.Peer = p.Addr
	}
	b.mu.Lock()
	b.calls = append(b.calls, call)
	respond := b.respond
	b.mu.Unlock()

	var resp proto.Message
	if respond != nil {
		if resp, err = respond(fullMethod, req); err != nil {
			return err
		}
	}
	if resp == nil {
		resp = newMessage(md.Output())
	}
	return stream.SendMsg(resp)
}

// lookup finds the descriptor of a full method name /pkg.Service/Method.
func lookup(fullMethod string) (protoreflect.MethodDescriptor, error) {
	service, method, ok := strings.Cut(strings.TrimPrefix(fullMethod, "/"), "/")
	if !ok {
		return nil, status.Errorf(codes.Unimplemented, "bad method %q", fullMethod)
	}
	d, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(service + "." + method))
	if err != nil {
		return nil, status.Errorf(codes.Unimplemented, "unknown method %q", fullMethod)
	}
	md, ok := d.(protoreflect.MethodDescriptor)
	if !ok {
		return nil, status.Errorf(codes.Unimplemented, "unknown method %q", fullMethod)
	}
	return md, nil
}

func newMessage(md protoreflect.MessageDescriptor) proto.Message {
	if mt, err := protoregistry.GlobalTypes.FindMessageByName(md.FullName()); err == nil {
		return mt.New().Interface()
	}
	return dynamicpb.NewMessage(md)
}

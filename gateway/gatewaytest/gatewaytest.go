// Package gatewaytest provides a stand-in backend for testing the REST
// gateway and the MCP bridge on their own: the in-process channel the
// daemon gives them (server/inproc), with every hearth.v1 method registered
// on it answering with what the test asks for and recording the metadata
// and peer each call arrived with.
//
// It tests transport behaviour only (metadata forwarding, error rendering,
// REST and MCP parity). Hearth's behaviour is tested against the real server
// and real storage elsewhere.
package gatewaytest

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"

	"github.com/hearth-memory/hearth/server/inproc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/dynamicpb"

	// Registers the hearth.v1 descriptors the backend's methods come from.
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
	// Peer is the caller's address as the server saw it (network
	// inproc.Network).
	Peer net.Addr
}

// Backend is an in-process channel serving every hearth.v1 method, the way
// the daemon connects the gateway and the bridge to its server.
type Backend struct {
	// Conn is the channel the gateway or bridge under test calls through.
	Conn *inproc.Channel

	mu      sync.Mutex
	respond Responder
	calls   []Call
}

// New starts a backend that answers with respond (nil: empty responses).
func New(tb testing.TB, respond Responder) *Backend {
	tb.Helper()
	b := &Backend{respond: respond, Conn: inproc.New(1 << 20)}
	var err error
	protoregistry.GlobalFiles.RangeFilesByPackage("hearth.v1", func(f protoreflect.FileDescriptor) bool {
		for i := range f.Services().Len() {
			if err = b.register(f.Services().Get(i)); err != nil {
				return false
			}
		}
		return true
	})
	if err != nil {
		tb.Fatalf("gatewaytest: %v", err)
	}
	return b
}

// register registers every method of service sd on the channel, found in
// the registered descriptors, so new RPCs need no change here.
func (b *Backend) register(sd protoreflect.ServiceDescriptor) error {
	desc := &grpc.ServiceDesc{ServiceName: string(sd.FullName())}
	for i := range sd.Methods().Len() {
		md := sd.Methods().Get(i)
		if md.IsStreamingClient() || md.IsStreamingServer() {
			return fmt.Errorf("method %s streams; the channel serves unary methods", md.FullName())
		}
		fullMethod := "/" + string(sd.FullName()) + "/" + string(md.Name())
		desc.Methods = append(desc.Methods, grpc.MethodDesc{
			MethodName: string(md.Name()),
			Handler: func(_ any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
				return b.handle(ctx, fullMethod, md, dec)
			},
		})
	}
	b.Conn.RegisterService(desc, nil)
	return nil
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

// handle serves one call of method md.
func (b *Backend) handle(ctx context.Context, fullMethod string, md protoreflect.MethodDescriptor, dec func(any) error) (any, error) {
	req := newMessage(md.Input())
	if err := dec(req); err != nil {
		return nil, err
	}
	call := Call{Method: fullMethod, Request: req}
	call.Metadata, _ = metadata.FromIncomingContext(ctx)
	if p, ok := peer.FromContext(ctx); ok {
		call.Peer = p.Addr
	}
	b.mu.Lock()
	b.calls = append(b.calls, call)
	respond := b.respond
	b.mu.Unlock()

	var resp proto.Message
	if respond != nil {
		var err error
		if resp, err = respond(fullMethod, req); err != nil {
			return nil, err
		}
	}
	if resp == nil {
		resp = newMessage(md.Output())
	}
	return resp, nil
}

func newMessage(md protoreflect.MessageDescriptor) proto.Message {
	if mt, err := protoregistry.GlobalTypes.FindMessageByName(md.FullName()); err == nil {
		return mt.New().Interface()
	}
	return dynamicpb.NewMessage(md)
}

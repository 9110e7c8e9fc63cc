package gateway

import (
	"cmp"
	"fmt"
	"slices"
	"sync"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/dynamicpb"

	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
)

// apiPrefix is where the REST routes live: POST /api/<tool name>.
const apiPrefix = "/api/"

// Route is one RPC as every transport offers it: the gRPC method, the REST
// route POST /api/<name>, the MCP tool <name>, and the scope the
// authorization interceptor demands, all read from the RPC's hearth.v1.tool
// option.
type Route struct {
	// Tool is the RPC's tool option: name, title, scope and annotation hints.
	Tool *hearthv1.Tool
	// Method describes the RPC, its request and its response.
	Method protoreflect.MethodDescriptor
}

// Scope returns the scope a caller needs for the RPC; Routes never returns
// a route whose scope is SCOPE_UNSPECIFIED.
func (r Route) Scope() hearthv1.Scope {
	return r.Tool.GetScope()
}

// FullMethod returns the gRPC method name, e.g. /hearth.v1.MemoryService/Store.
func (r Route) FullMethod() string {
	return "/" + string(r.Method.Parent().FullName()) + "/" + string(r.Method.Name())
}

// Path returns the REST path, e.g. /api/memory_store.
func (r Route) Path() string {
	return apiPrefix + r.Tool.GetName()
}

// NewRequest returns an empty request message for the RPC.
func (r Route) NewRequest() proto.Message {
	return newMessage(r.Method.Input())
}

// NewResponse returns an empty response message for the RPC.
func (r Route) NewResponse() proto.Message {
	return newMessage(r.Method.Output())
}

// newMessage returns an empty message of md's registered Go type, or a
// dynamic one if no Go type is registered.
func newMessage(md protoreflect.MessageDescriptor) proto.Message {
	if mt, err := protoregistry.GlobalTypes.FindMessageByName(md.FullName()); err == nil {
		return mt.New().Interface()
	}
	return dynamicpb.NewMessage(md)
}

// Routes returns every RPC of every service in package hearth.v1, read from
// the registered descriptors: the one walk over them that the authorization
// table, the REST routes and the MCP tools are all built from, so a new RPC
// becomes a scope, a route and a tool without code anywhere else. They come
// ordered by file, then in declaration order. The slice is shared: do not
// modify it.
//
// It fails, so that the daemon does not start, when an RPC has no tool option,
// no name or no scope (the interceptor would deny it anyway: fail closed,
// loudly), when two RPCs share a name, or when an RPC streams.
func Routes() ([]Route, error) {
	return routes()
}

// routes walks the descriptors once per process: they are fixed at link time.
var routes = sync.OnceValues(walk)

func walk() ([]Route, error) {
	var files []protoreflect.FileDescriptor
	protoregistry.GlobalFiles.RangeFilesByPackage(hearthv1.File_hearth_v1_tool_proto.Package(),
		func(fd protoreflect.FileDescriptor) bool {
			files = append(files, fd)
			return true
		})
	slices.SortFunc(files, func(a, b protoreflect.FileDescriptor) int { return cmp.Compare(a.Path(), b.Path()) })

	var routes []Route
	names := make(map[string]protoreflect.FullName)
	for _, fd := range files {
		services := fd.Services()
		for i := range services.Len() {
			methods := services.Get(i).Methods()
			for j := range methods.Len() {
				md := methods.Get(j)
				tool, _ := proto.GetExtension(md.Options(), hearthv1.E_Tool).(*hearthv1.Tool)
				switch {
				case tool == nil || tool.GetName() == "":
					return nil, fmt.Errorf("gateway: RPC %s has no hearth.v1.tool option with a name", md.FullName())
				case tool.GetScope() == hearthv1.Scope_SCOPE_UNSPECIFIED || hearthv1.Scope_name[int32(tool.GetScope())] == "":
					return nil, fmt.Errorf("gateway: RPC %s declares no scope in its hearth.v1.tool option", md.FullName())
				case md.IsStreamingClient() || md.IsStreamingServer():
					return nil, fmt.Errorf("gateway: RPC %s streams and cannot be a route or tool", md.FullName())
				case names[tool.GetName()] != "":
					return nil, fmt.Errorf("gateway: RPCs %s and %s share the tool name %q", names[tool.GetName()], md.FullName(), tool.GetName())
				}
				names[tool.GetName()] = md.FullName()
				routes = append(routes, Route{Tool: tool, Method: md})
			}
		}
	}
	if len(routes) == 0 {
		return nil, fmt.Errorf("gateway: no RPCs registered in package hearth.v1")
	}
	return routes, nil
}

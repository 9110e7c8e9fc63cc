package auth

import (
	"fmt"

	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// publicMethods need no credentials: health checks and reflection expose
// nothing from the store.
var publicMethods = []string{
	"/grpc.health.v1.Health/Check",
	"/grpc.health.v1.Health/Watch",
	"/grpc.health.v1.Health/List",
	"/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
	"/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
}

var scopeNames = map[hearthv1.Scope]Scope{
	hearthv1.Scope_SCOPE_READ:   Read,
	hearthv1.Scope_SCOPE_WRITE:  Write,
	hearthv1.Scope_SCOPE_DELETE: Delete,
	hearthv1.Scope_SCOPE_EXPORT: Export,
	hearthv1.Scope_SCOPE_ADMIN:  Admin,
}

// Services returns every service of the hearth.v1 package, as registered by
// the generated code.
func Services() []protoreflect.ServiceDescriptor {
	var out []protoreflect.ServiceDescriptor
	protoregistry.GlobalFiles.RangeFilesByPackage("hearth.v1", func(fd protoreflect.FileDescriptor) bool {
		for i := 0; i < fd.Services().Len(); i++ {
			out = append(out, fd.Services().Get(i))
		}
		return true
	})
	return out
}

// MethodFullName returns the gRPC method name, /pkg.Service/Method.
func MethodFullName(m protoreflect.MethodDescriptor) string {
	return fmt.Sprintf("/%s/%s", m.Parent().FullName(), m.Name())
}

// ToolOf returns the hearth.v1.tool option of m, or nil.
func ToolOf(m protoreflect.MethodDescriptor) *hearthv1.Tool {
	opts := m.Options()
	if opts == nil || !proto.HasExtension(opts, hearthv1.E_Tool) {
		return nil
	}
	t, _ := proto.GetExtension(opts, hearthv1.E_Tool).(*hearthv1.Tool)
	return t
}

// Methods builds the method table from the descriptors: every hearth.v1 RPC
// with the scope its tool option declares, plus the public methods. An RPC
// without a valid scope is left out, so the interceptor denies it; Methods
// reports such RPCs in its error so start-up can refuse to run.
func Methods() (map[string]Scope, error) {
	table := map[string]Scope{}
	for _, m := range publicMethods {
		table[m] = Public
	}
	var missing []string
	for _, sd := range Services() {
		for i := 0; i < sd.Methods().Len(); i++ {
			md := sd.Methods().Get(i)
			t := ToolOf(md)
			var s Scope
			if t != nil {
				s = scopeNames[t.GetScope()]
			}
			if s == "" {
				missing = append(missing, MethodFullName(md))
				continue
			}
			table[MethodFullName(md)] = s
		}
	}
	if len(missing) > 0 {
		return table, fmt.Errorf("auth: RPCs without a scope (denied): %v", missing)
	}
	return table, nil
}

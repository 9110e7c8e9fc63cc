package gateway_test

import (
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/hearth-memory/hearth/gateway"
	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
)

func TestRoutes(t *testing.T) {
	t.Parallel()
	routes, err := gateway.Routes()
	if err != nil {
		t.Fatal(err)
	}
	got := make(map[string]gateway.Route)
	for _, r := range routes {
		got[r.FullMethod()] = r
	}
	// Every RPC of every hearth.v1 service, as registered by the generated
	// code, is a route (a new service is covered without editing this test).
	var services []protoreflect.ServiceDescriptor
	protoregistry.GlobalFiles.RangeFilesByPackage("hearth.v1", func(fd protoreflect.FileDescriptor) bool {
		for i := 0; i < fd.Services().Len(); i++ {
			services = append(services, fd.Services().Get(i))
		}
		return true
	})
	if len(services) < 3 {
		t.Fatalf("found %d hearth.v1 services, want Memory, Admin and Session at least", len(services))
	}
	for _, sd := range services {
		for i := 0; i < sd.Methods().Len(); i++ {
			full := "/" + string(sd.FullName()) + "/" + string(sd.Methods().Get(i).Name())
			r, ok := got[full]
			if !ok {
				t.Errorf("RPC %s has no route", full)
				continue
			}
			if r.Tool.GetScope() == hearthv1.Scope_SCOPE_UNSPECIFIED {
				t.Errorf("RPC %s declares no scope", full)
			}
			if r.Tool.GetTitle() == "" {
				t.Errorf("RPC %s has no title", full)
			}
		}
	}
}

package auth

import (
	"fmt"
	"slices"
	"strings"

	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
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

// scopeOf returns the scope a tool option declares: SCOPE_READ is read.
// It fails (false) for the enum's zero value (no scope declared) and for a value that names
// none of the five scopes.
func scopeOf(declared hearthv1.Scope) (Scope, bool) {
	s := Scope(strings.ToLower(strings.TrimPrefix(declared.String(), "SCOPE_")))
	return s, s.Valid()
}

// Table returns the interceptor's method table: every RPC of rpcs (full gRPC
// method name, e.g. /hearth.v1.MemoryService/Store, to the scope its tool
// option declares) plus the public methods. The caller builds rpcs from the
// one walk over the descriptors that also makes the REST routes and the MCP
// tools, so the three cannot disagree.
//
// It fails, naming them, when an RPC declares no scope or one Table does
// not know, or when an RPC would shadow a public method: start-up must
// refuse to run rather than deny (or open) a method silently.
func Table(rpcs map[string]hearthv1.Scope) (map[string]Scope, error) {
	table := make(map[string]Scope, len(rpcs)+len(publicMethods))
	for _, m := range publicMethods {
		table[m] = Public
	}
	var bad []string
	for method, declared := range rpcs {
		s, ok := scopeOf(declared)
		if _, public := table[method]; !ok || public {
			bad = append(bad, method)
			continue
		}
		table[method] = s
	}
	if len(bad) > 0 {
		slices.Sort(bad)
		return nil, fmt.Errorf("auth: RPCs without a valid scope: %v", bad)
	}
	return table, nil
}

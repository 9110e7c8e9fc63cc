package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/hearth-memory/hearth/gateway"
	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
)

// BackupDir is where memory_backup writes its copies.
func (d *Daemon) BackupDir() string { return filepath.Join(d.Config.DataDir, "backups") }

// toolNames maps every RPC's full method name to its tool name: the closed
// set of the metrics' tool label. gateway.Routes cannot fail here: Open has
// walked the same descriptors already, and a failure leaves the map empty
// (every call then counts as "other").
func toolNames() map[string]string {
	routes, _ := gateway.Routes()
	out := make(map[string]string, len(routes))
	for _, r := range routes {
		out[r.FullMethod()] = r.Tool.GetName()
	}
	return out
}

// metricsHandler serves GET /metrics: memory_metrics over the in-process
// channel with the caller's Authorization header and address, so the
// one interceptor decides (admin scope) and audits, as for every call. A
// refusal is the same JSON error body as REST's (401 or 403); success is
// the Prometheus text format.
func metricsHandler(conn grpc.ClientConnInterface) http.Handler {
	admin := hearthv1.NewAdminServiceClient(conn)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		md := gateway.CallerMetadata(gateway.Caller(r))
		resp, err := admin.Metrics(metadata.NewOutgoingContext(r.Context(), md), &hearthv1.MetricsRequest{})
		if err != nil {
			gateway.WriteError(w, err)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		io.WriteString(w, resp.GetText())
	})
}

var metricsSpec = spec{name: "metrics", args: "(--data DIR | [--url URL] --token-file FILE)",
	about: `Prints the server's metrics (GET /metrics: the Prometheus text format).
With --data it asks the server running on DIR over DIR's admin socket, as
the local admin; otherwise the server at --url, as the token's client
(admin scope).`}

// metricsCmd runs `hearth metrics`.
func metricsCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := metricsSpec.newFlags(stderr)
	data := addDataFlag(fs)
	api := addAPIFlags(fs, "admin")
	if code, ok := metricsSpec.parse(fs, args, stdout, stderr); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return metricsSpec.fail(stderr, "unexpected argument %q", fs.Arg(0))
	}
	c, code := api.connect(metricsSpec, *data, stderr)
	if c == nil {
		return code
	}
	text, err := c.do(ctx, http.MethodGet, "/metrics", "metrics", nil)
	if err != nil {
		fmt.Fprintln(stderr, "hearth metrics:", err)
		return 1
	}
	stdout.Write(text)
	return 0
}

package main

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hearth-memory/hearth/server/options"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

type testDaemon struct {
	*Daemon
	url    string
	tokens map[string]string
	conn   *grpc.ClientConn
}

// startDaemon runs a whole daemon on 127.0.0.1:0 over a temp data dir; it
// closes when the test ends.
func startDaemon(tb testing.TB, opts options.Options) *testDaemon {
	tb.Helper()
	return openDaemon(tb, &Daemon{Config: Config{DataDir: tb.TempDir(), Options: opts}}, true)
}

// openDaemon opens d (on 127.0.0.1:0 unless d.Config.Listen is set, with a
// discarding log unless d.Log is set), reads its generated tokens and dials
// it over gRPC. With autoClose the daemon and the connection close when the
// test ends; without, the test closes them with closeDaemon (to open the
// same data dir again).
func openDaemon(tb testing.TB, d *Daemon, autoClose bool) *testDaemon {
	tb.Helper()
	if d.Config.Listen == "" {
		d.Config.Listen = "127.0.0.1:0"
	}
	if d.Log == nil {
		d.Log = discardLog()
	}
	if err := d.Open(context.Background()); err != nil {
		tb.Fatalf("open daemon: %v", err)
	}
	td := &testDaemon{Daemon: d, url: "http://" + d.Addr(), tokens: map[string]string{}}
	entries, _ := os.ReadDir(d.TokensDir())
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(d.TokensDir(), e.Name()))
		if err != nil {
			tb.Fatal(err)
		}
		td.tokens[e.Name()] = strings.TrimSpace(string(b))
	}
	td.conn = dialGRPC(tb, d.Addr())
	if autoClose {
		tb.Cleanup(func() {
			td.conn.Close()
			d.Close(context.Background())
		})
	}
	return td
}

// closeDaemon closes a daemon opened without autoClose.
func closeDaemon(tb testing.TB, td *testDaemon) {
	tb.Helper()
	td.conn.Close()
	if err := td.Close(context.Background()); err != nil {
		tb.Fatalf("close daemon: %v", err)
	}
}

func discardLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// dialGRPC opens a plaintext gRPC client connection to addr.
func dialGRPC(tb testing.TB, addr string) *grpc.ClientConn {
	tb.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		tb.Fatal(err)
	}
	return conn
}

// freePort returns a TCP port that was free a moment ago.
func freePort(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}

// Command hearth is the Hearth memory server: one daemon serving gRPC, REST
// (/api/) and MCP (/mcp) on one port over a SQLite store.
//
//	hearth serve --data DIR [--listen 127.0.0.1:8765] [--ingress-listen 127.0.0.1:8099] [--option key=value ...]
//	hearth version
//	hearth healthcheck [--url http://127.0.0.1:8765/healthz]
//	hearth hook session-start|prompt|session-end --harness claude-code|codex [--url URL] [--token-file FILE]
//	hearth connect claude-code|codex [--url URL] [--token-file FILE] [--apply]
//	hearth backup --data DIR --out FILE [--url URL --token-file FILE]
//	hearth restore --data DIR FILE
//	hearth export [--url URL] --token-file FILE [--prefix NS] [--out FILE]
//	hearth import [--url URL] --token-file FILE [--as-active] FILE
//	hearth token rotate|show --client NAME ...
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/hearth-memory/hearth/server/options"
	"github.com/hearth-memory/hearth/server/version"
)

// processStart is when the process started, as near as Go can tell:
// prompt recall's deadline counts from it.
var processStart = time.Now()

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `usage:
  hearth serve --data DIR [--listen ADDR] [--ingress-listen ADDR] [--option key=value ...]
  hearth version
  hearth healthcheck [--url URL]
  hearth hook session-start|prompt|session-end --harness claude-code|codex [--url URL] [--token-file FILE]
  hearth connect claude-code|codex [--url URL] [--token-file FILE] [--apply]
  hearth backup --data DIR --out FILE [--url URL --token-file FILE]
  hearth restore --data DIR FILE
  hearth export [--url URL] --token-file FILE [--prefix NS] [--out FILE]
  hearth import [--url URL] --token-file FILE [--as-active] FILE
  hearth token rotate --client NAME [--data DIR] [--url URL --token-file FILE]
  hearth token show --client NAME --data DIR [--reveal]
`

// run executes one subcommand and returns the process exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "serve":
		cfg, err := parseServeFlags(args[1:], stderr)
		if err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return 0
			}
			fmt.Fprintln(stderr, "hearth:", err)
			return 2
		}
		// The one read of the environment: the Supervisor's token.
		cfg.SupervisorToken = os.Getenv("SUPERVISOR_TOKEN")
		if err := serve(ctx, cfg, stdout, stderr); err != nil {
			fmt.Fprintln(stderr, "hearth:", err)
			return 1
		}
		return 0
	case "version":
		fmt.Fprintln(stdout, version.Version)
		return 0
	case "healthcheck":
		return healthcheck(ctx, args[1:], stderr)
	case "hook":
		return runHook(ctx, args[1:], os.Stdin, stdout, stderr, processStart)
	case "connect":
		return runConnect(args[1:], stdout, stderr)
	case "backup":
		return backupCmd(ctx, args[1:], stdout, stderr)
	case "restore":
		return restoreCmd(ctx, args[1:], stdout, stderr)
	case "export":
		return exportCmd(ctx, args[1:], stdout, stderr)
	case "import":
		return importCmd(ctx, args[1:], stdout, stderr)
	case "token":
		return tokenCmd(ctx, args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "hearth: unknown command %q\n%s", args[0], usage)
	return 2
}

// Config is what `hearth serve` runs with, after flags and options.json.
type Config struct {
	DataDir string
	Listen  string
	// IngressListen is the page's own listener (SPEC R-T6); "" turns the
	// page off. It serves the Supervisor's ingress proxy and loopback only.
	IngressListen string
	Options       options.Options
	// SupervisorToken is SUPERVISOR_TOKEN, read once at start: set inside
	// Home Assistant, where the entity sweep reads states through the
	// Supervisor; "" elsewhere, and entity anchors stay unknown (R-H3).
	SupervisorToken string
	// SupervisorURL is the Supervisor's base URL; "" means
	// homeassistant.DefaultURL (tests point it at a test Supervisor).
	SupervisorURL string
}

type optionFlags []string

func (o *optionFlags) String() string     { return strings.Join(*o, ",") }
func (o *optionFlags) Set(v string) error { *o = append(*o, v); return nil }

// parseServeFlags reads the serve flags and DIR/options.json.
func parseServeFlags(args []string, stderr io.Writer) (Config, error) {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg Config
	var sets optionFlags
	fs.StringVar(&cfg.DataDir, "data", "", "data directory (database, tokens, options.json)")
	fs.StringVar(&cfg.Listen, "listen", "127.0.0.1:8765", "address for gRPC, REST and MCP")
	fs.StringVar(&cfg.IngressListen, "ingress-listen", "", "address for the dashboard page, e.g. 127.0.0.1:8099 (off when empty); it serves only Home Assistant's ingress proxy (172.30.32.2) and loopback")
	fs.Var(&sets, "option", "override one option, key=value (value as JSON or a bare string); repeatable")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if cfg.DataDir == "" {
		return cfg, errors.New("--data is required")
	}
	// Overrides apply before validation, so one can rescue a bad value in
	// options.json.
	opts, err := options.Load(options.Path(cfg.DataDir), sets...)
	if err != nil {
		return cfg, err
	}
	cfg.Options = opts
	return cfg, nil
}

// shutdownDeadline bounds how long calls in flight may take to finish after
// SIGTERM or SIGINT.
const shutdownDeadline = 10 * time.Second

func serve(ctx context.Context, cfg Config, stdout, stderr io.Writer) error {
	log := slog.New(slog.NewTextHandler(stderr, nil))
	d := &Daemon{Config: cfg, Log: log}
	if err := d.Open(ctx); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "hearth %s listening on %s (gRPC, REST /api/, MCP /mcp)\n", version.Version, d.Addr())
	// Only generated tokens are written; clients configured with a token
	// hash or an address have none here.
	if entries, _ := os.ReadDir(d.TokensDir()); len(entries) > 0 {
		fmt.Fprintf(stdout, "client tokens are in %s (one file per client)\n", d.TokensDir())
	}
	if a := d.IngressAddr(); a != "" {
		fmt.Fprintf(stdout, "dashboard page on %s (ingress proxy and loopback only)\n", a)
	}
	<-ctx.Done()
	log.Info("shutting down: finishing calls in flight", "deadline_s", shutdownDeadline.Seconds())
	start := time.Now()
	shutdown, cancel := context.WithTimeout(context.Background(), shutdownDeadline)
	defer cancel()
	if err := d.Close(shutdown); err != nil {
		log.Error("stopped with errors", "ms", time.Since(start).Milliseconds(), "err", err)
		return err
	}
	log.Info("stopped", "ms", time.Since(start).Milliseconds())
	return nil
}

func healthcheck(ctx context.Context, args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("healthcheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	url := fs.String("url", "http://127.0.0.1:8765/healthz", "liveness URL")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, *url, nil)
	if err != nil {
		fmt.Fprintln(stderr, "hearth healthcheck:", err)
		return 1
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintln(stderr, "hearth healthcheck:", err)
		return 1
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintln(stderr, "hearth healthcheck: status", resp.StatusCode)
		return 1
	}
	return 0
}

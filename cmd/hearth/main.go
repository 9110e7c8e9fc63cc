// Command hearth is the Hearth memory server: one daemon serving gRPC, REST
// (/api/) and MCP (/mcp) on one port over a SQLite store, and the commands
// that connect agents to it and operate it. `hearth --help` lists them;
// `hearth COMMAND --help` gives each one's usage (cli.go).
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/hearth-memory/hearth/server/options"
	"github.com/hearth-memory/hearth/server/version"
)

// processStart is when the process's main package was initialised, after
// every other package's init: the hooks count their deadlines from
// hookStart, which is earlier where the kernel tells.
var processStart = time.Now()

// hookStart is when the process started, for the hooks' deadlines (prompt
// recall's 300 ms, the tool hook's 80 ms; docs/capture.md): the kernel's
// start time where it can be read (kernelStart), else processStart. The
// time package initialisation takes is then inside the budget, not on top
// of it.
func hookStart() time.Time {
	// A start more than a minute before main's package init is not this
	// process's start-up: trust main's clock then.
	if t, ok := kernelStart(); ok && t.Before(processStart) && processStart.Sub(t) < time.Minute {
		return t
	}
	return processStart
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// commands are hearth's subcommands, in the order the usage lists them.
var commands = []struct {
	spec    *spec
	summary string
}{
	{&serveSpec, "run the server"},
	{&versionSpec, "print the version (also hearth --version)"},
	{&healthSpec, "exit 0 when the server answers GET /healthz"},
	{&connectSpec, "connect Claude Code, Codex or Copilot: MCP server and hooks"},
	{&hookSpec, "run one Claude Code, Codex or Copilot hook (their settings call it)"},
	{&backupSpec, "copy the database, verified"},
	{&restoreSpec, "replace the database with a backup (server stopped)"},
	{&exportSpec, "write records as JSON Lines"},
	{&importSpec, "read records from JSON Lines"},
	{&tokenSpec, "rotate a client's generated token, or show where it is"},
	{&metricsSpec, "print the server's metrics (Prometheus text)"},
	{&completionSpec, "print a shell completion script"},
}

// usage is hearth's own usage, from commands.
func usage() string {
	var b strings.Builder
	b.WriteString("usage: hearth COMMAND [ARGUMENTS]\n       hearth --version\n\ncommands:\n")
	for _, c := range commands {
		fmt.Fprintf(&b, "  %-12s %s\n", c.spec.name, c.summary)
	}
	b.WriteString("\nRun 'hearth COMMAND --help' for a command's usage. Commands that talk to a\n" +
		"server take --url, its base URL (default $HEARTH_URL, else " + defaultURL + ").\n")
	return b.String()
}

var versionSpec = spec{name: "version", about: "Prints the version of this binary."}

// run executes one subcommand and returns the process exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage())
		return 2
	}
	switch args[0] {
	case "serve":
		cfg, code, ok := parseServe(args[1:], stdout, stderr)
		if !ok {
			return code
		}
		// The one read of the environment: the Supervisor's token.
		cfg.SupervisorToken = os.Getenv("SUPERVISOR_TOKEN")
		if err := serve(ctx, cfg, stdout, stderr); err != nil {
			fmt.Fprintln(stderr, "hearth:", err)
			return 1
		}
		return 0
	case "version", "--version", "-version", "-v":
		if len(args) > 1 && args[0] == "version" {
			fs := versionSpec.newFlags(stderr)
			if code, ok := versionSpec.parse(fs, args[1:], stdout, stderr); !ok {
				return code
			}
			if fs.NArg() > 0 {
				return versionSpec.fail(stderr, "unexpected argument %q", fs.Arg(0))
			}
		}
		fmt.Fprintln(stdout, version.Version)
		return 0
	case "healthcheck":
		return healthcheck(ctx, args[1:], stdout, stderr)
	case "hook":
		return runHook(ctx, args[1:], os.Stdin, stdout, stderr, hookStart())
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
	case "metrics":
		return metricsCmd(ctx, args[1:], stdout, stderr)
	case "completion":
		return completionCmd(args[1:], stdout, stderr)
	case "help", "-h", "--help", "-help":
		if len(args) > 1 && args[0] == "help" && !wantsHelp(args[1]) {
			// hearth help COMMAND is hearth COMMAND --help.
			return run(ctx, []string{args[1], "--help"}, stdout, stderr)
		}
		fmt.Fprint(stdout, usage())
		return 0
	}
	fmt.Fprintf(stderr, "hearth: unknown command %q\n%s", args[0], usage())
	return 2
}

// Config is what `hearth serve` runs with, after flags and options.json.
type Config struct {
	DataDir string
	Listen  string
	// IngressListen is the page's own listener (docs/design.md R-T6); "" turns the
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
	// TLSCert and TLSKey are PEM files: set, the port speaks TLS (REST, MCP
	// and gRPC alike); unset, plain HTTP.
	TLSCert, TLSKey string
}

type optionFlags []string

func (o *optionFlags) String() string     { return strings.Join(*o, ",") }
func (o *optionFlags) Set(v string) error { *o = append(*o, v); return nil }

var serveSpec = spec{name: "serve", args: "--data DIR [--database URL] [--listen ADDR] [--ingress-listen ADDR] [--tls-cert FILE --tls-key FILE] [--option key=value ...]",
	about: `Runs the server: gRPC, REST (/api/) and MCP (/mcp) on one port over the
database in DIR, reading DIR/options.json once at start (docs/running.md).
With --database (or the database_url option) the records are stored in
that PostgreSQL database instead, and DIR keeps the tokens and options; a
build needs the postgres tag for it. With --tls-cert and --tls-key the port
speaks TLS for all three; without, plain HTTP.`}

// parseServe parses serve's arguments: ok is false when serve is done
// (help asked for, or bad arguments or options, with code).
func parseServe(args []string, stdout, stderr io.Writer) (Config, int, bool) {
	fs := serveSpec.newFlags(stderr)
	cfg, sets := serveFlags(fs)
	if code, ok := serveSpec.parse(fs, args, stdout, stderr); !ok {
		return *cfg, code, false
	}
	if err := loadServe(fs, cfg, *sets); err != nil {
		fmt.Fprintln(stderr, "hearth serve:", err)
		return *cfg, 2, false
	}
	return *cfg, 0, true
}

// serveFlags defines serve's flags on fs.
func serveFlags(fs *flag.FlagSet) (*Config, *optionFlags) {
	cfg := &Config{}
	sets := &optionFlags{}
	fs.StringVar(&cfg.DataDir, "data", "", "data directory (database, tokens, options.json)")
	fs.Func("database", "a PostgreSQL `URL` to store in instead of DIR's SQLite file (postgres://user:password@host/db); sets the database_url option", func(v string) error {
		*sets = append(*sets, "database_url="+v)
		return nil
	})
	fs.StringVar(&cfg.Listen, "listen", "127.0.0.1:8765", "address for gRPC, REST and MCP")
	fs.StringVar(&cfg.IngressListen, "ingress-listen", "", "address for the dashboard page, e.g. 127.0.0.1:8099 (off when empty); it serves only Home Assistant's ingress proxy (172.30.32.2) and loopback")
	fs.Var(sets, "option", "override one option, `key=value` (value as JSON or a bare string); repeatable")
	fs.StringVar(&cfg.TLSCert, "tls-cert", "", "PEM certificate chain: serve TLS on --listen (with --tls-key)")
	fs.StringVar(&cfg.TLSKey, "tls-key", "", "PEM private key of --tls-cert")
	return cfg, sets
}

// loadServe checks the parsed flags and reads DIR/options.json.
func loadServe(fs *flag.FlagSet, cfg *Config, sets optionFlags) error {
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if cfg.DataDir == "" {
		return errors.New("--data is required")
	}
	if (cfg.TLSCert == "") != (cfg.TLSKey == "") {
		return errors.New("--tls-cert and --tls-key go together")
	}
	// Overrides apply before validation, so one can rescue a bad value in
	// options.json.
	opts, err := options.Load(options.Path(cfg.DataDir), sets...)
	if err != nil {
		return err
	}
	cfg.Options = opts
	if opts.DatabaseURL != "" && !postgresBuilt {
		return errors.New(`option "database_url": this hearth was built without PostgreSQL; ` +
			"build it with the postgres tag (make build TAGS=postgres; docs/operations.md, \"PostgreSQL\")")
	}
	// The add-on's ssl option: the certificate and key from Home
	// Assistant's /ssl folder, unless the flags name others.
	if opts.SSL && cfg.TLSCert == "" {
		cfg.TLSCert, cfg.TLSKey = filepath.Join(sslDir, opts.CertFile), filepath.Join(sslDir, opts.KeyFile)
	}
	return nil
}

// getHealthz asks GET base/healthz and returns the status.
func getHealthz(ctx context.Context, hc *http.Client, base string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/healthz", nil)
	if err != nil {
		return 0, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// sslDir is where Home Assistant gives add-ons its certificates (the
// add-on maps it read-only).
const sslDir = "/ssl"

// parseServeFlags reads the serve flags and DIR/options.json (for tests and
// docs checks: no usage printed).
func parseServeFlags(args []string, stderr io.Writer) (Config, error) {
	fs := serveSpec.newFlags(stderr)
	cfg, sets := serveFlags(fs)
	if err := fs.Parse(args); err != nil {
		return *cfg, err
	}
	err := loadServe(fs, cfg, *sets)
	return *cfg, err
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
	// Start-up, the whole-file check after it and bursts of calls touch
	// most of the binary and grow the Go heap; an idle server uses a small
	// part of either. What they left resident is given back once the
	// server listens, when the check is done and every trimEvery after
	// (docs/operations.md, "Memory").
	trim := func() {
		if _, err := releaseImagePages(); err != nil {
			log.Warn("releasing the binary's pages", "err", err)
		}
		debug.FreeOSMemory()
	}
	trim()
	tick := time.NewTicker(trimEvery)
	defer tick.Stop()
	go trimLoop(ctx, d.checked, tick.C, trim)
	over := ""
	if d.Scheme() == "https" {
		over = " over TLS"
	}
	fmt.Fprintf(stdout, "hearth %s listening on %s (gRPC, REST /api/, MCP /mcp%s)\n", version.Version, d.Addr(), over)
	// The URL as the page shows it: never its password.
	if u := cfg.Options.DatabaseURL; u != "" {
		fmt.Fprintf(stdout, "records in PostgreSQL at %s; tokens and options in %s\n", options.RedactDatabaseURL(u), cfg.DataDir)
	}
	// Only generated tokens are written; clients configured with a token
	// hash or an address have none here.
	if entries, _ := os.ReadDir(d.TokensDir()); len(entries) > 0 {
		fmt.Fprintf(stdout, "client tokens are in %s (one file per client)\n", d.TokensDir())
	}
	if a := d.IngressAddr(); a != "" {
		fmt.Fprintf(stdout, "dashboard page on %s (ingress proxy and loopback only)\n", a)
	}
	if p := d.AdminSocketPath(); p != "" {
		fmt.Fprintf(stdout, "admin socket %s: hearth backup, export, import, token rotate and metrics with --data need no token on this machine\n", p)
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

var healthSpec = spec{name: "healthcheck", args: "[--url URL] [--ca-file FILE]",
	about: `Asks GET /healthz of the server at URL (its base URL, as every command
takes it) and exits 0 when it answers 200, 1 otherwise. The add-on's image
runs it as its HEALTHCHECK.`}

func healthcheck(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := healthSpec.newFlags(stderr)
	srv := addServerFlags(fs)
	if code, ok := healthSpec.parse(fs, args, stdout, stderr); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return healthSpec.fail(stderr, "unexpected argument %q", fs.Arg(0))
	}
	// A URL ending in /healthz, as this command once wanted, still works.
	base, hc, err := srv.resolve(strings.TrimSuffix(strings.TrimRight(*srv.url, "/"), "/healthz"))
	if err != nil {
		return healthSpec.fail(stderr, "%v", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	status, err := getHealthz(ctx, hc, base)
	// The add-on's image probes the default URL; with its ssl option the
	// port speaks TLS, and Go's server answers plain HTTP 400. On loopback
	// only, the probe asks again over TLS without checking the certificate
	// (it sends nothing but GET /healthz).
	if err == nil && status == http.StatusBadRequest && strings.HasPrefix(base, "http://127.0.0.1:") {
		insecure := http.DefaultTransport.(*http.Transport).Clone()
		insecure.TLSClientConfig = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // loopback liveness probe, no secret sent
		status, err = getHealthz(ctx, &http.Client{Transport: insecure}, "https://"+strings.TrimPrefix(base, "http://"))
	}
	if err != nil {
		fmt.Fprintln(stderr, "hearth healthcheck:", err)
		return 1
	}
	if status != http.StatusOK {
		fmt.Fprintln(stderr, "hearth healthcheck: status", status)
		return 1
	}
	return 0
}

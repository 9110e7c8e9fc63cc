package harness

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

// daemon is a `hearth serve` process on 127.0.0.1:0 over its own data
// directory, and a REST client holding one of its generated write tokens.
type daemon struct {
	cmd    *exec.Cmd
	addr   string
	log    string
	client *client
	exited chan struct{}
	// drop, when set, drops the daemon's PostgreSQL database once it has
	// stopped (Config.Database).
	drop func() error
}

var listening = regexp.MustCompile(`listening on (\S+)`)

// startTimeout bounds how long a daemon may take to listen.
const startTimeout = 60 * time.Second

// startDaemon writes options (the set's options.json, or none) into a new
// data directory under workDir, runs `hearth serve` with the --option
// overrides opts, waits for its "listening on" line and reads a client
// token it generated. The daemon's stderr goes to hearth-<name>.log in
// workDir. serveArgs go to `hearth serve` as they are (--database URL).
func startDaemon(ctx context.Context, bin, workDir, name string, options []byte, opts []string, serveArgs ...string) (*daemon, error) {
	if err := os.MkdirAll(workDir, 0o755); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(workDir, "data-"+name+"-")
	if err != nil {
		return nil, err
	}
	if options != nil {
		if err := os.WriteFile(filepath.Join(dir, "options.json"), options, 0o600); err != nil {
			return nil, err
		}
	}
	logPath := filepath.Join(workDir, "hearth-"+name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	args := []string{"serve", "--data", dir, "--listen", "127.0.0.1:0"}
	for _, o := range opts {
		args = append(args, "--option", o)
	}
	args = append(args, serveArgs...)
	cmd := exec.Command(bin, args...)
	cmd.Stderr = logFile
	// An io.Pipe rather than StdoutPipe: Wait then copies stdout to the
	// end before it returns, so reading and waiting may run concurrently.
	stdout, pw := io.Pipe()
	cmd.Stdout = pw
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	d := &daemon{cmd: cmd, log: logPath, exited: make(chan struct{})}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case addr <- m[1]:
				default:
				}
			}
		}
		io.Copy(io.Discard, stdout)
	}()
	go func() {
		cmd.Wait()
		pw.Close()
		logFile.Close()
		close(d.exited)
	}()
	select {
	case d.addr = <-addr:
	case <-d.exited:
		return nil, fmt.Errorf("hearth exited before listening (%v); see %s:\n%s", cmd.ProcessState, logPath, tail(logPath))
	case <-time.After(startTimeout):
		d.stop()
		return nil, fmt.Errorf("hearth did not listen within %v; see %s", startTimeout, logPath)
	case <-ctx.Done():
		d.stop()
		return nil, ctx.Err()
	}
	token, err := readToken(filepath.Join(dir, "tokens"))
	if err != nil {
		d.stop()
		return nil, err
	}
	d.client = &client{base: "http://" + d.addr, token: token, http: &http.Client{Timeout: 2 * time.Minute}}
	return d, nil
}

// stop asks the daemon to shut down (SIGINT, as Ctrl-C does) and kills it
// if it has not exited within 15 seconds; then drops its database, if it
// has one (a failure to is said on stderr: the figures stand).
func (d *daemon) stop() {
	defer d.dropDatabase()
	select {
	case <-d.exited:
		return
	default:
	}
	_ = d.cmd.Process.Signal(os.Interrupt)
	select {
	case <-d.exited:
	case <-time.After(15 * time.Second):
		_ = d.cmd.Process.Kill()
		<-d.exited
	}
}

// dropDatabase drops the daemon's database once.
func (d *daemon) dropDatabase() {
	if d.drop == nil {
		return
	}
	if err := d.drop(); err != nil {
		fmt.Fprintf(os.Stderr, "eval: dropping the database of %s: %v\n", d.log, err)
	}
	d.drop = nil
}

// readToken returns the first generated client token, by file name. The
// default clients (claude-code, codex) both hold the write scope.
func readToken(dir string) (string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", fmt.Errorf("client tokens: %w", err)
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		if e.Type().IsRegular() {
			names = append(names, e.Name())
		}
	}
	slices.Sort(names)
	if len(names) == 0 {
		return "", errors.New("client tokens: the daemon generated none (the set's options must leave a client with the write scope and no token_sha256)")
	}
	b, err := os.ReadFile(filepath.Join(dir, names[0]))
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// tail returns the last lines of a log file, for an error message.
func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return strings.Join(lines, "\n")
}

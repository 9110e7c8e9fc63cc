package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hearth-memory/hearth/storage"
)

// socketClient is the CLI's HTTP client of the server over the admin
// socket at path (localClient), whatever the URL's host.
func socketClient(t *testing.T, path string) *http.Client {
	t.Helper()
	c, err := localClient(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	return c.http
}

// whoami calls memory_whoami through hc at base with the Authorization
// header auth ("" for none) and returns the status and the client named.
func whoami(t *testing.T, hc *http.Client, base, auth string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/api/memory_whoami", strings.NewReader("{}"))
	req.Header.Set("Content-Type", "application/json")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Client string `json:"client"`
	}
	json.NewDecoder(resp.Body).Decode(&body)
	return resp.StatusCode, body.Client
}

// TestLocalAdmin_Socket holds the local admin (issue 42): a running server
// listens on DIR/admin.sock, a socket of mode 0600; backup, export,
// import, token rotate and metrics given --data DIR work over it with no
// token, as the built-in client hearth:local-admin, which the audit
// records; that identity comes from the socket alone (a request over TCP
// gets nothing from it, and one over the socket is the local admin whatever
// Authorization it brings); the socket goes when the server stops, and a
// socket a dead server left is replaced.
func TestLocalAdmin_Socket(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sock := filepath.Join(dir, AdminSocket)
	// A socket left by a server that died: the next start replaces it.
	stale, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	stale.SetUnlinkOnClose(false)
	stale.Close()
	td := openDaemon(t, &Daemon{Config: Config{DataDir: dir, Options: parityOptions()}}, false)
	closed := false
	t.Cleanup(func() {
		if !closed {
			closeDaemon(t, td)
		}
	})
	fi, err := os.Lstat(sock)
	if err != nil || fi.Mode().Type() != fs.ModeSocket || fi.Mode().Perm() != 0o600 {
		t.Fatalf("admin socket %s: %v %v, want a socket of mode 0600", sock, fi, err)
	}
	if td.AdminSocketPath() != sock {
		t.Errorf("AdminSocketPath %q, want %q", td.AdminSocketPath(), sock)
	}
	bulk(t, td.db, "github/acme/api", 5) // and Identity stores one more

	t.Run("Identity", func(t *testing.T) {
		hc := socketClient(t, sock)
		for _, auth := range []string{"", "Bearer " + td.tokens["codex"], "Bearer hearth_not-a-token"} {
			if code, client := whoami(t, hc, "http://localhost", auth); code != http.StatusOK || client != LocalAdminName {
				t.Errorf("over the socket with Authorization %q: %d %q, want 200 %s", auth[:min(len(auth), 7)], code, client, LocalAdminName)
			}
		}
		// The local admin writes as itself.
		req, _ := http.NewRequest(http.MethodPost, "http://localhost/api/memory_store",
			strings.NewReader(`{"namespace":"global","type":"note","title":"Stored locally","content":"Stored over the admin socket."}`))
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var stored struct {
			Record struct{ Writer string } `json:"record"`
		}
		json.NewDecoder(resp.Body).Decode(&stored)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || stored.Record.Writer != LocalAdminName {
			t.Errorf("memory_store over the socket: %d, writer %q, want 200 by %s", resp.StatusCode, stored.Record.Writer, LocalAdminName)
		}
		// Over TCP the socket's identity is nobody's: no token is no
		// caller, and a token is its own client.
		if code, _ := whoami(t, http.DefaultClient, td.url, ""); code != http.StatusUnauthorized {
			t.Errorf("over TCP with no token: %d, want 401", code)
		}
		if code, client := whoami(t, http.DefaultClient, td.url, "Bearer "+td.tokens["codex"]); code != http.StatusOK || client != "codex" {
			t.Errorf("over TCP with codex's token: %d %q", code, client)
		}
		if code, _, _ := scrape(t, td, ""); code != http.StatusUnauthorized {
			t.Errorf("GET /metrics over TCP with no token: %d, want 401", code)
		}
	})

	t.Run("Commands", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "backup.db")
		code, stdout, stderr := cli(t, "backup", "--data", dir, "--out", out)
		if code != 0 || !strings.Contains(stdout, "backup by the running server written to "+out) {
			t.Fatalf("backup: exit %d %q %q", code, stdout, stderr)
		}
		if n, err := storage.Verify(context.Background(), out); err != nil || n != 6 {
			t.Errorf("the backup: %d records, %v; want 6", n, err)
		}
		lines := filepath.Join(t.TempDir(), "export.jsonl")
		code, stdout, stderr = cli(t, "export", "--data", dir, "--out", lines)
		if code != 0 || !strings.Contains(stderr, "exported 6 records to "+lines) {
			t.Fatalf("export: exit %d %q %q", code, stdout, stderr)
		}
		code, stdout, stderr = cli(t, "import", "--data", dir, "--as-active", lines)
		if code != 0 || !strings.Contains(stdout, "imported 0, unchanged 6, failed 0") {
			t.Errorf("import: exit %d %q %q", code, stdout, stderr)
		}
		old := td.tokens["codex"]
		code, stdout, stderr = cli(t, "token", "rotate", "--client", "codex", "--data", dir)
		if code != 0 || !strings.Contains(stdout, "rotated the token of codex: the new one is in "+tokenFile(td, "codex")) {
			t.Fatalf("token rotate: exit %d %q %q", code, stdout, stderr)
		}
		if r := (restTransport{td}).call(t, old, "memory_whoami", map[string]any{}); r.ok {
			t.Error("the rotated-out token still works")
		}
		code, stdout, stderr = cli(t, "metrics", "--data", dir)
		if code != 0 {
			t.Fatalf("metrics: exit %d %q", code, stderr)
		}
		fams := parseMetrics(t, stdout)
		if v, ok := sample(fams, "hearth_records", map[string]string{"status": "active", "type": "note"}); !ok || v != 6 {
			t.Errorf("metrics: hearth_records{status=active,type=note} %v %v, want 6", v, ok)
		}
		for _, a := range []storage.Action{storage.ActionBackup, storage.ActionTokenRotate} {
			rows := auditEntries(t, td.db, a)
			if len(rows) != 1 || rows[0].Client != LocalAdminName {
				t.Errorf("%s audit rows %+v, want one by %s", a, rows, LocalAdminName)
			}
		}
		if strings.Contains(stdout+stderr, old) {
			t.Error("a command printed a token")
		}
	})

	t.Run("NoSocket", func(t *testing.T) {
		// A server with no socket (as on a read-only data directory): the
		// CLI says how else to ask it.
		if err := os.Remove(sock); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(t.TempDir(), "backup.db")
		code, _, stderr := cli(t, "backup", "--data", dir, "--out", out)
		if code != 1 || !strings.Contains(stderr, "a server holds") || !strings.Contains(stderr, "no admin socket "+sock) ||
			!strings.Contains(stderr, "--token-file FILE") {
			t.Errorf("backup of a held directory with no socket: exit %d, %s", code, stderr)
		}
	})

	closeDaemon(t, td)
	closed = true
	code, _, stderr := cli(t, "export", "--data", dir)
	if code != 1 || !strings.Contains(stderr, "no admin socket "+sock) {
		t.Errorf("export with no server: exit %d %q, want 1 saying there is no admin socket", code, stderr)
	}
	code, _, stderr = cli(t, "metrics")
	if code != 2 || !strings.Contains(stderr, "--data DIR (on the server's machine) or --token-file FILE is required") {
		t.Errorf("metrics with neither --data nor --token-file: exit %d %q, want a usage error", code, stderr)
	}
}

// adminChildEnv tells this test binary, run as another user, what to do
// instead of testing (TestLocalAdmin_Child).
const adminChildEnv = "HEARTH_TEST_ADMIN_CHILD"

// TestLocalAdmin_Child is not a test: run by the tests below as another
// user, it does what adminChildEnv says and prints the outcome.
//   - "dial PATH": GET /healthz over the socket PATH; prints "answered
//     STATUS" or "refused: ERROR".
//   - "serve DIR": opens a daemon on DIR while DIR is read-only (after a
//     first start, holding the database open so that its -wal and -shm
//     files stay); prints "serving, socket: PATH" (PATH "" for none) or
//     "failed: ERROR".
func TestLocalAdmin_Child(t *testing.T) {
	t.Parallel()
	what, arg, _ := strings.Cut(os.Getenv(adminChildEnv), " ")
	switch what {
	case "":
		t.Skip("run by TestLocalAdmin_OtherUsers and TestLocalAdmin_ReadOnlyDir as another user")
	case "dial":
		resp, err := socketClient(t, arg).Get("http://localhost/healthz")
		if err != nil {
			os.Stdout.WriteString("refused: " + err.Error() + "\n")
			return
		}
		resp.Body.Close()
		os.Stdout.WriteString("answered " + resp.Status + "\n")
	case "serve":
		os.Stdout.WriteString(serveReadOnly(arg) + "\n")
	}
}

// serveReadOnly is TestLocalAdmin_Child's "serve DIR".
func serveReadOnly(dir string) string {
	ctx := context.Background()
	first := &Daemon{Config: Config{DataDir: dir, Listen: "127.0.0.1:0", Options: testOptions()}, Log: discardLog()}
	if err := first.Open(ctx); err != nil {
		return "failed: first start: " + err.Error()
	}
	if err := first.Close(ctx); err != nil {
		return "failed: first close: " + err.Error()
	}
	// SQLite writes its -wal and -shm files beside the database: a reader
	// holding it open keeps them, as a backup tool or a second reader would.
	db, err := sql.Open("sqlite3", "file:"+filepath.Join(dir, dbFile))
	if err != nil {
		return "failed: " + err.Error()
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		return "failed: " + err.Error()
	}
	defer conn.Close()
	var n int
	if err := conn.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master").Scan(&n); err != nil {
		return "failed: reader: " + err.Error()
	}
	if err := os.Chmod(dir, 0o500); err != nil {
		return "failed: " + err.Error()
	}
	if f, err := os.Create(filepath.Join(dir, "probe")); err == nil {
		f.Close()
		return "failed: the data directory is not read-only"
	}
	d := &Daemon{Config: Config{DataDir: dir, Listen: "127.0.0.1:0", Options: testOptions()}, Log: discardLog()}
	if err := d.Open(ctx); err != nil {
		return "failed: " + err.Error()
	}
	defer d.Close(ctx)
	resp, err := http.Get("http://" + d.Addr() + "/healthz")
	if err != nil {
		return "failed: " + err.Error()
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "failed: healthz " + resp.Status
	}
	return "serving, socket: " + d.AdminSocketPath()
}

// nobody is the user the cross-user tests run their child as.
const nobody = 65534

// asNobody runs this test binary's TestLocalAdmin_Child as the user nobody
// with adminChildEnv set to what, and returns its output. The binary is
// copied where nobody may run it. It skips unless the test runs as root,
// the only user that may run a process as another.
func asNobody(t *testing.T, what string) string {
	t.Helper()
	needRoot(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(openDir(t), "hearth.test")
	if err := copyExecutable(self, bin); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, "-test.run=^TestLocalAdmin_Child$", "-test.v")
	cmd.Env = append(os.Environ(), adminChildEnv+"="+what)
	cmd.Dir = filepath.Dir(bin)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	asUser(cmd, nobody)
	if err := cmd.Run(); err != nil {
		t.Fatalf("child: %v\n%s%s", err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// needRoot skips the test unless it runs as root.
func needRoot(t *testing.T) {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("only root can run a process as another user: run as root to see another user refused")
	}
}

// openDir is a temporary directory that every user may enter and read.
func openDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for d := dir; d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func copyExecutable(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// TestLocalAdmin_OtherUsers holds that another user's process cannot use
// the admin socket: the socket's mode keeps it from connecting, and were
// the mode wider (as in the moment between the socket's creation and its
// chmod), the server hangs up on it, by the peer's credentials.
func TestLocalAdmin_OtherUsers(t *testing.T) {
	t.Parallel()
	needRoot(t)
	dir := openDir(t)
	var log lockedBuffer
	td := openDaemon(t, &Daemon{Config: Config{DataDir: dir, Options: testOptions()}, Log: slog.New(slog.NewTextHandler(&log, nil))}, true)
	sock := td.AdminSocketPath()
	if sock == "" {
		t.Fatal("no admin socket")
	}
	out := asNobody(t, "dial "+sock)
	t.Logf("mode 0600: %s", out)
	if !strings.Contains(out, "refused: ") || !strings.Contains(out, "permission denied") {
		t.Errorf("another user, socket mode 0600: %q, want refused by the mode (permission denied)", out)
	}
	if err := os.Chmod(sock, 0o666); err != nil {
		t.Fatal(err)
	}
	out = asNobody(t, "dial "+sock)
	t.Logf("mode 0666: %s", out)
	if !strings.Contains(out, "refused: ") {
		t.Errorf("another user, socket mode 0666: %q, want refused by its peer credentials", out)
	}
	if !strings.Contains(log.String(), `msg="admin socket: refused another user's connection" uid=65534`) {
		t.Errorf("the log does not name the refused user:\n%s", log.String())
	}
	// This process (root) is served: the refusal above is by user.
	if resp, err := socketClient(t, sock).Get("http://localhost/healthz"); err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("root over the socket: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
}

// TestLocalAdmin_ReadOnlyDir holds that on a read-only data directory the
// server starts and serves without an admin socket. It runs the server as
// another user: root writes in any directory.
func TestLocalAdmin_ReadOnlyDir(t *testing.T) {
	t.Parallel()
	needRoot(t)
	dir := filepath.Join(openDir(t), "data")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	out := asNobody(t, "serve "+dir)
	t.Logf("child: %s", out)
	if !strings.Contains(out, "serving, socket: \n") {
		t.Errorf("serve on a read-only data directory: %q, want serving with no socket", out)
	}
	if _, err := os.Lstat(filepath.Join(dir, AdminSocket)); !os.IsNotExist(err) {
		t.Errorf("an admin socket in the read-only data directory: %v", err)
	}
}

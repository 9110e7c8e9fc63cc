package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net/http"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/hearth-memory/hearth/server/options"
	"github.com/hearth-memory/hearth/server/servertest"
	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/storagetest"
)

// pgURL is a new database on the tests' private PostgreSQL
// (storagetest.URL) and its password, which the URL carries.
func pgURL(t *testing.T) (url, password string) {
	t.Helper()
	url = storagetest.URL(t)
	u, err := neturl.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	password, _ = u.User.Password()
	if len(password) < 8 {
		t.Fatalf("the test database's URL carries no password to look for: %q", u.Redacted())
	}
	return url, password
}

var dashboardLine = regexp.MustCompile(`dashboard page on (\S+) `)

// TestPostgres_Process holds `hearth serve --database` (issue #46) in a real
// process, built with the postgres tag, over the tests' private
// PostgreSQL: a record stored over REST is got back; /health and the page
// name the backend; the data directory keeps the tokens and no SQLite file,
// and token rotate and backup with --data ask the server; and nothing the process printed, nor the page, carries the URL's
// password.
func TestPostgres_Process(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the hearth binary")
	}
	bin := buildHearth(t)
	url, password := pgURL(t)
	dir := t.TempDir()
	p := startServe(t, bin, []string{"--data", dir, "--database", url, "--listen", "127.0.0.1:0", "--ingress-listen", "127.0.0.1:0"})
	base := "http://" + p.addr

	tok, err := os.ReadFile(filepath.Join(dir, "tokens", "claude-code"))
	if err != nil {
		t.Fatalf("the data directory keeps the generated tokens: %v", err)
	}
	token := strings.TrimSpace(string(tok))
	rest := servertest.REST{URL: base}
	const content = "The billing service retries a failed invoice three times."
	st := rest.Call(t, token, "memory_store", map[string]any{"namespace": "global", "type": "note", "title": "Invoice retries", "content": content})
	if !st.OK {
		t.Fatalf("memory_store: %v", st)
	}
	id := str(st.Body, "record", "id")
	got := rest.Call(t, token, "memory_get", map[string]any{"ids": []string{id}})
	if !got.OK || len(list(got.Body, "records")) != 1 || str(got.Body, "records", 0, "content") != content {
		t.Fatalf("memory_get %s: %v", id, got)
	}
	if _, err := os.Stat(filepath.Join(dir, dbFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s in the data directory (%v): the records belong in PostgreSQL", dbFile, err)
	}

	var h map[string]any
	resp, err := http.Get(base + "/health")
	if err != nil {
		t.Fatal(err)
	}
	err = json.NewDecoder(resp.Body).Decode(&h)
	resp.Body.Close()
	if err != nil || h["backend"] != "postgres" || h["store"] != "ok" || h["degraded"] != false {
		t.Errorf("/health: %v %v, want backend postgres, store ok", h, err)
	}

	page := p.waitLine(t, dashboardLine)[1]
	code, html := getPage(t, http.DefaultClient, "http://"+page+"/", nil)
	redacted := options.RedactDatabaseURL(url)
	if code != http.StatusOK || !strings.Contains(html, `id="store-backend">PostgreSQL`) || !strings.Contains(html, "<code>"+redacted+"</code>") {
		t.Errorf("the page (%d) does not name PostgreSQL and %s", code, redacted)
	}
	if strings.Contains(html, password) {
		t.Error("the page shows the database's password")
	}

	// With no database file in DIR, token rotate asks the server over
	// DIR's admin socket; the old token is refused from then on.
	if out, err := exec.Command(bin, "token", "rotate", "--client", "claude-code", "--data", dir).CombinedOutput(); err != nil ||
		!strings.Contains(string(out), "rotated the token of claude-code") {
		t.Errorf("hearth token rotate --data: %v\n%s", err, out)
	}
	if r := rest.Call(t, token, "memory_get", map[string]any{"ids": []string{id}}); r.OK || r.HTTP != http.StatusUnauthorized {
		t.Errorf("the rotated token: %v, want 401", r)
	}

	// backup --data asks the server too, which names what backs its
	// database up instead.
	backup := filepath.Join(t.TempDir(), "hearth.db")
	out, err := exec.Command(bin, "backup", "--data", dir, "--out", backup).CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(string(out), "pg_dump") {
		t.Errorf("hearth backup --data: %v, want exit 1 naming pg_dump\n%s", err, out)
	}
	if _, err := os.Stat(backup); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("hearth backup left %s: %v", backup, err)
	}

	// restore --data refuses, naming pg_restore, and writes nothing into
	// DIR: a sound SQLite backup would otherwise become a hearth.db no
	// server reads.
	file := sqliteBackup(t)
	before := dirEntries(t, dir)
	out, err = exec.Command(bin, "restore", "--data", dir, file).CombinedOutput()
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(string(out), "pg_restore") || !strings.Contains(string(out), "nothing was changed") {
		t.Errorf("hearth restore --data: %v, want exit 1 naming pg_restore\n%s", err, out)
	}
	if after := dirEntries(t, dir); !slices.Equal(before, after) {
		t.Errorf("the refused restore changed the data directory: %v, then %v", before, after)
	}

	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Wait(); err != nil {
		t.Errorf("hearth serve after SIGTERM: %v", err)
	}
	out = []byte(p.output())
	if !strings.Contains(string(out), "records in PostgreSQL at "+redacted+"; tokens and options in "+dir) {
		t.Errorf("output does not say where the records are:\n%s", out)
	}
	if strings.Contains(string(out), password) {
		t.Errorf("output carries the database's password:\n%s", out)
	}
}

// TestPostgres_ProcessRefused: a start that PostgreSQL refuses (a wrong
// password) exits 1 naming the database by its URL without the password,
// and prints neither password.
func TestPostgres_ProcessRefused(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the hearth binary")
	}
	bin := buildHearth(t)
	url, password := pgURL(t)
	wrong := "not-" + password
	u, _ := neturl.Parse(url)
	u.User = neturl.UserPassword(u.User.Username(), wrong)
	cmd := exec.Command(bin, "serve", "--data", t.TempDir(), "--database", u.String(), "--listen", "127.0.0.1:0")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("hearth serve with a wrong password: %v, want exit 1\n%s", err, out)
	}
	if !strings.Contains(string(out), "database "+options.RedactDatabaseURL(u.String())+": ") {
		t.Errorf("the error does not name the database:\n%s", out)
	}
	if strings.Contains(string(out), password) {
		t.Errorf("output carries a password:\n%s", out)
	}
}

// TestServe_DatabaseWithoutDriver: a build without the postgres tag (as
// this test binary is) refuses --database before it opens anything, saying
// how to get a build that has it, and never repeats the URL.
func TestServe_DatabaseWithoutDriver(t *testing.T) {
	t.Parallel()
	if postgresBuilt {
		t.Skip("this test binary has the postgres tag")
	}
	dir := t.TempDir()
	var stderr strings.Builder
	cfg, code, ok := parseServe([]string{"--data", dir, "--database", "postgres://hearth:hunter2@db.lan/hearth"}, io.Discard, &stderr)
	if ok || code != 2 {
		t.Fatalf("parseServe: ok %v code %d, want a refusal with exit 2", ok, code)
	}
	msg := stderr.String()
	if !strings.Contains(msg, `option "database_url": this hearth was built without PostgreSQL`) || !strings.Contains(msg, "TAGS=postgres") {
		t.Errorf("got %q, want it to name database_url and the postgres tag", msg)
	}
	if strings.Contains(msg, "hunter2") {
		t.Errorf("got %q: it repeats the password", msg)
	}
	if cfg.Options.DatabaseURL != "postgres://hearth:hunter2@db.lan/hearth" {
		t.Errorf("--database set database_url to %q", cfg.Options.DatabaseURL)
	}
	if entries, _ := os.ReadDir(dir); len(entries) > 0 {
		t.Errorf("the refused start wrote %d entries into the data directory", len(entries))
	}
}

// sqliteBackup is a sound backup of a SQLite store (a new one, migrated),
// which `hearth restore` would take.
func sqliteBackup(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "backup.db")
	db, err := storage.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// dirEntries lists what is in dir and below it, by relative path.
func dirEntries(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out = append(out, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestBackupRestore_PostgresConfigured: with database_url in DIR's
// options.json and no server running, backup and restore refuse before
// they touch anything, naming pg_dump and pg_restore and the database
// without its password: the records are not in a SQLite file of DIR.
func TestBackupRestore_PostgresConfigured(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const url = "postgres://hearth:hunter2secret@db.lan:5432/hearth"
	if err := os.WriteFile(filepath.Join(dir, "options.json"), []byte(`{"database_url": "`+url+`"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	file := sqliteBackup(t)
	before := dirEntries(t, dir)
	redacted := options.RedactDatabaseURL(url)

	code, stdout, stderr := cli(t, "restore", "--data", dir, file)
	if code != 1 || !strings.Contains(stderr, "pg_restore") || !strings.Contains(stderr, redacted) || !strings.Contains(stderr, "nothing was changed") {
		t.Errorf("restore: exit %d %q %q, want 1 naming pg_restore and %s", code, stdout, stderr, redacted)
	}
	out := filepath.Join(t.TempDir(), "copy.db")
	code, stdout, stderr2 := cli(t, "backup", "--data", dir, "--out", out)
	if code != 1 || !strings.Contains(stderr2, "pg_dump") || !strings.Contains(stderr2, redacted) {
		t.Errorf("backup: exit %d %q %q, want 1 naming pg_dump and %s", code, stdout, stderr2, redacted)
	}
	if strings.Contains(stderr+stderr2, "hunter2secret") {
		t.Errorf("a refusal shows the database's password: %q %q", stderr, stderr2)
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the refused backup left %s: %v", out, err)
	}
	if after := dirEntries(t, dir); !slices.Equal(before, after) {
		t.Errorf("the refusals changed the data directory: %v, then %v", before, after)
	}
}

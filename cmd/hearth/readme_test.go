package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hearth-memory/hearth/server/options"
)

// The README's quick start and docs/running.md are checked here, in the
// package of the binary they start: the quick start runs against a daemon
// that `make run` starts, and the service and Docker lines are checked
// against hearth serve's own flag parser.

// repoRoot is the repository, seen from this package's directory (where
// go test runs).
const repoRoot = "../.."

// fence is one fenced code block of a Markdown file.
type fence struct {
	line int    // the line of the opening fence, from 1
	lang string // the info string after ```
	code string
	// want is set for a block marked <!-- test: want TEXT -->; tested for
	// any block marked <!-- test --> or <!-- test: want … -->.
	tested bool
	want   string
}

var testMarker = regexp.MustCompile(`^<!-- test(?:: want (.+?))? -->$`)

// fences returns the fenced code blocks of a Markdown file. A test marker
// must stand on the line right before an ```sh fence.
func fences(tb testing.TB, name string) []fence {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, name))
	if err != nil {
		tb.Fatal(err)
	}
	var out []fence
	lines := strings.Split(string(b), "\n")
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if strings.HasPrefix(l, "<!-- test") {
			m := testMarker.FindStringSubmatch(l)
			if m == nil {
				tb.Fatalf("%s:%d: malformed marker %q: want <!-- test --> or <!-- test: want TEXT -->", name, i+1, l)
			}
			if i+1 >= len(lines) || lines[i+1] != "```sh" {
				tb.Fatalf("%s:%d: a test marker must stand right before an ```sh fence", name, i+1)
			}
			continue
		}
		lang, ok := strings.CutPrefix(l, "```")
		if !ok {
			continue
		}
		f := fence{line: i + 1, lang: lang}
		if i > 0 {
			if m := testMarker.FindStringSubmatch(lines[i-1]); m != nil {
				f.tested, f.want = true, m[1]
			}
		}
		var code []string
		for i++; i < len(lines) && lines[i] != "```"; i++ {
			code = append(code, lines[i])
		}
		if i == len(lines) {
			tb.Fatalf("%s:%d: fence never closed", name, f.line)
		}
		f.code = strings.Join(code, "\n") + "\n"
		out = append(out, f)
	}
	return out
}

// TestReadme_QuickStart runs the README's quick start exactly as written:
// `make run` starts the daemon (on a temp data dir and free ports, through
// the Makefile's own DATA, LISTEN and INGRESS variables), then bash runs the
// marked blocks in order, in one shell, in a scratch directory laid out like
// the checkout after `make run`, `make grpcurl` and `make install`: data/
// (the daemon's data dir), .tmp/bin/grpcurl and hearth on PATH, with a
// fresh empty HOME. HEARTH_URL, which the README's first block defaults to
// http://127.0.0.1:8765, is the daemon's URL. Nothing in the blocks is
// rewritten. After the blocks, the settings the connect blocks wrote are
// checked: each harness with its own client's token, kept in a file.
func TestReadme_QuickStart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts hearth with make run")
	}
	t.Parallel()
	grpcurl := os.Getenv("HEARTH_GRPCURL")
	if grpcurl == "" {
		t.Skip("HEARTH_GRPCURL is not set: the README's gRPC example needs grpcurl (make test installs it with make grpcurl and sets it)")
	}
	if _, err := os.Stat(grpcurl); err != nil {
		t.Fatalf("HEARTH_GRPCURL: %v", err)
	}
	for _, tool := range []string{"bash", "curl", "make"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("the README's commands need %s: %v", tool, err)
		}
	}
	var blocks []fence
	for _, f := range fences(t, "README.md") {
		if f.tested {
			blocks = append(blocks, f)
		}
	}
	// The quick start issue 12 asks for: store, then search over REST, MCP
	// and gRPC, each search checked for what was stored.
	// Issue 42 adds the recommended path to the hooks: hearth connect
	// --apply for each harness, with its token in a file.
	for _, need := range []string{"/api/memory_store", "/api/memory_search", "/mcp", "grpcurl",
		"hearth connect claude-code", "hearth connect codex"} {
		i := slices.IndexFunc(blocks, func(f fence) bool { return strings.Contains(f.code, need) })
		if i < 0 {
			t.Fatalf("no block marked for testing in README.md uses %s", need)
		}
		if need != "/api/memory_store" && blocks[i].want == "" {
			t.Fatalf("README.md:%d: the block with %s has no <!-- test: want … --> marker", blocks[i].line, need)
		}
	}

	scratch := t.TempDir()
	if err := os.MkdirAll(filepath.Join(scratch, ".tmp", "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(grpcurl, filepath.Join(scratch, ".tmp", "bin", "grpcurl")); err != nil {
		t.Fatal(err)
	}
	url, bin := makeRun(t, filepath.Join(scratch, "data"))

	// Run first, on the still fresh store: without the store block, every
	// search must come back empty and the test must say so.
	t.Run("ErrFreshStoreFindsNothing", func(t *testing.T) {
		var noStore []fence
		for _, f := range blocks {
			if !strings.Contains(f.code, "/api/memory_store") {
				noStore = append(noStore, f)
			}
		}
		err := runBlocks(t, noStore, scratch, url, t.TempDir(), bin)
		if err == nil || !strings.Contains(err.Error(), "output lacks") {
			t.Fatalf("got %v, want a search whose output lacks what it wants", err)
		}
		first, _, _ := strings.Cut(err.Error(), "\n")
		t.Logf("as it should: %s", first)
	})
	t.Run("OK", func(t *testing.T) {
		home := t.TempDir()
		if err := runBlocks(t, blocks, scratch, url, home, bin); err != nil {
			t.Fatal(err)
		}
		checkConnected(t, home, url, filepath.Join(scratch, "data", "tokens"))
	})
}

// checkConnected checks what the README's connect blocks left in home:
// each harness's settings point at url and read its own client's token
// from a file of mode 0600, and no settings file holds a token.
func checkConnected(t *testing.T, home, url, tokens string) {
	t.Helper()
	read := func(parts ...string) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(append([]string{home}, parts...)...))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	token := map[string]string{}
	for _, client := range []string{"claude-code", "codex"} {
		b, err := os.ReadFile(filepath.Join(tokens, client))
		if err != nil {
			t.Fatal(err)
		}
		token[client] = strings.TrimSpace(string(b))
		fi, err := os.Stat(filepath.Join(home, ".config", "hearth", client+".token"))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want 0600", fi.Name(), fi.Mode().Perm())
		}
	}
	settings := map[string][]string{
		"claude-code": {read(".claude.json"), read(".claude", "settings.json")},
		"codex":       {read(".codex", "config.toml"), read(".codex", "hooks.json")},
	}
	for client, files := range settings {
		other := "codex"
		if client == "codex" {
			other = "claude-code"
		}
		all := strings.Join(files, "\n")
		for _, want := range []string{url + "/mcp", "hook session-start", "--token-file", client + ".token"} {
			if !strings.Contains(all, want) {
				t.Errorf("%s's settings lack %q:\n%s", client, want, all)
			}
		}
		if strings.Contains(all, other+".token") {
			t.Errorf("%s's settings read the %s token:\n%s", client, other, all)
		}
		for c, tok := range token {
			if strings.Contains(all, tok) {
				t.Errorf("%s's settings hold the %s token itself", client, c)
			}
		}
	}
	// Claude Code's MCP entry gets its header from the helper command it
	// names: run it as Claude Code does.
	var claude struct {
		MCPServers map[string]struct {
			URL           string `json:"url"`
			HeadersHelper string `json:"headersHelper"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal([]byte(settings["claude-code"][0]), &claude); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("bash", "-c", claude.MCPServers["hearth"].HeadersHelper).Output()
	if err != nil {
		t.Fatalf("headersHelper %q: %v", claude.MCPServers["hearth"].HeadersHelper, err)
	}
	var headers map[string]string
	if err := json.Unmarshal(out, &headers); err != nil || headers["Authorization"] != "Bearer "+token["claude-code"] {
		t.Errorf("headersHelper does not send the claude-code token (%v)", err)
	}
}

// makeRun builds hearth with `make build` and starts it with `make run`
// (DATA=data, free ports, the binary in a temp BIN) and returns the URL it
// listens on and BIN. The daemon stops when the test ends.
func makeRun(t *testing.T, data string) (url, bin string) {
	t.Helper()
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	bin = t.TempDir()
	vars := []string{"BIN=" + bin, "DATA=" + data, "LISTEN=127.0.0.1:0", "INGRESS=127.0.0.1:0"}
	// A user's shell carries no make state.
	env := withoutMake(os.Environ())
	// Building first, without a deadline: a cold build takes minutes on a
	// small machine, and make run's own build is then up to date.
	build := exec.Command("make", append([]string{"-C", root, "--no-print-directory", "build"}, vars...)...)
	build.Env = env
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("make build: %v\n%s", err, out)
	}

	cmd := exec.Command("make", append([]string{"-C", root, "--no-print-directory", "run"}, vars...)...)
	cmd.Env = env
	// Its own process group: make and the hearth it starts stop together.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p := capture(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopGroup(t, cmd) })
	return "http://" + p.waitLine(t, listeningLine)[1], bin
}

// stopGroup sends SIGTERM to cmd's process group (make and hearth), waits
// for make, and makes sure nothing of the group outlives the test.
func stopGroup(t *testing.T, cmd *exec.Cmd) {
	pgid := cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	_ = cmd.Wait()
	deadline := time.Now().Add(15 * time.Second)
	for syscall.Kill(-pgid, 0) == nil {
		if time.Now().After(deadline) {
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			t.Errorf("hearth did not stop on SIGTERM within 15s")
			return
		}
		time.Sleep(10 * time.Millisecond) // polling a condition, not waiting for time
	}
}

// runBlocks runs blocks with bash, in order and in one shell (as a user
// types them into one terminal), in dir, with HEARTH_URL=url, HOME=home and
// bin (where make install would put hearth) first on PATH. It returns an
// error naming the first block that failed or whose output lacks its want.
func runBlocks(t *testing.T, blocks []fence, dir, url, home, bin string) error {
	t.Helper()
	work := t.TempDir()
	var driver strings.Builder
	driver.WriteString("set -euo pipefail\ncd \"$1\"\n")
	for i, f := range blocks {
		if err := os.WriteFile(filepath.Join(work, fmt.Sprintf("%d.sh", i)), []byte(f.code), 0o600); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&driver, "source %[1]q/%[2]d.sh >%[1]q/%[2]d.out 2>%[1]q/%[2]d.err\necho %[2]d >>%[1]q/done\n", work, i)
	}
	script := filepath.Join(work, "driver.sh")
	if err := os.WriteFile(script, []byte(driver.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "--noprofile", "--norc", script, dir)
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		// Nothing of the caller's shell set-up: a fresh terminal, a fresh
		// home, no harness settings elsewhere.
		if !slices.Contains([]string{"BASH_ENV", "ENV", "CDPATH", "HEARTH_URL", "HEARTH_TOKEN", "HEARTH_TOKEN_FILE",
			"HOME", "PATH", "CLAUDE_CONFIG_DIR", "CODEX_HOME", "XDG_CONFIG_HOME"}, k) {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "HEARTH_URL="+url, "HOME="+home, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	runErr := cmd.Run()

	done, _ := os.ReadFile(filepath.Join(work, "done"))
	ran := len(strings.Fields(string(done)))
	for i, f := range blocks {
		out, _ := os.ReadFile(filepath.Join(work, fmt.Sprintf("%d.out", i)))
		errOut, _ := os.ReadFile(filepath.Join(work, fmt.Sprintf("%d.err", i)))
		if i >= ran {
			return fmt.Errorf("README.md:%d: block failed (%v):\n%s\nstdout:\n%s\nstderr:\n%s%s", f.line, runErr, f.code, out, errOut, stderr.Bytes())
		}
		if !bytes.Contains(out, []byte(f.want)) {
			return fmt.Errorf("README.md:%d: output lacks %q:\n%s\nstdout:\n%s\nstderr:\n%s", f.line, f.want, f.code, out, errOut)
		}
	}
	if runErr != nil {
		return fmt.Errorf("bash: %v\n%s", runErr, stderr.Bytes())
	}
	return nil
}

// TestMakefile_Test holds what the README says of `make test`, from a dry
// run (make -n) over an empty tool folder: every tool is announced in one
// line before its install, SKIP_BROWSER=1 neither installs Chromium nor
// sets HEARTH_CHROMIUM, and SKIP_POSTGRES=1 neither installs PostgreSQL nor
// sets HEARTH_REQUIRE_POSTGRES.
func TestMakefile_Test(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	dry := func(t *testing.T, vars ...string) string {
		t.Helper()
		tmp := t.TempDir() // nothing installed yet
		args := append([]string{"-C", root, "--no-print-directory", "-n", "test",
			"TMP=" + tmp, "CHROMIUM=" + filepath.Join(tmp, "no-chromium")}, vars...)
		cmd := exec.Command("make", args...)
		cmd.Env = withoutMake(os.Environ())
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("make -n test: %v\n%s", err, out)
		}
		return string(out)
	}
	goTest := func(t *testing.T, out string) string {
		t.Helper()
		for _, l := range strings.Split(out, "\n") {
			if strings.Contains(l, "go test") {
				return l
			}
		}
		t.Fatalf("no go test line in:\n%s", out)
		return ""
	}
	announced := []struct{ say, install string }{
		{"installing the official MCP TypeScript SDK", "npm install"},
		{"installing grpcurl v1.9.3 into .tmp/bin", "github.com/fullstorydev/grpcurl/cmd/grpcurl@v1.9.3"},
		{"installing Debian's chromium with apt-get install --no-install-recommends", "apt-get install -y --no-install-recommends chromium"},
	}
	t.Run("OK", func(t *testing.T) {
		out := dry(t)
		for _, a := range announced {
			say, install := strings.Index(out, a.say), strings.Index(out, a.install)
			if say < 0 || install < 0 || say > install {
				t.Errorf("want %q announced before %q; got:\n%s", a.say, a.install, out)
			}
		}
		if l := goTest(t, out); !strings.Contains(l, "HEARTH_CHROMIUM=") || !strings.Contains(l, "HEARTH_GRPCURL=") {
			t.Errorf("go test runs without HEARTH_CHROMIUM or HEARTH_GRPCURL: %s", l)
		}
	})
	t.Run("SkipBrowser", func(t *testing.T) {
		out := dry(t, "SKIP_BROWSER=1")
		if strings.Contains(out, "chromium") {
			t.Errorf("SKIP_BROWSER=1 still installs chromium:\n%s", out)
		}
		l := goTest(t, out)
		if strings.Contains(l, "HEARTH_CHROMIUM=") || !strings.Contains(l, "env -u HEARTH_CHROMIUM") {
			t.Errorf("SKIP_BROWSER=1: go test must run with HEARTH_CHROMIUM unset: %s", l)
		}
	})
	// The PostgreSQL tests' server (docs/postgres.md): make test checks for
	// it and requires it; SKIP_POSTGRES=1 does neither.
	t.Run("Postgres", func(t *testing.T) {
		out := dry(t)
		if !strings.Contains(out, "apt-get install -y --no-install-recommends postgresql") {
			t.Errorf("make test does not check for PostgreSQL's binaries:\n%s", out)
		}
		if l := goTest(t, out); !strings.Contains(l, "HEARTH_REQUIRE_POSTGRES=1") {
			t.Errorf("go test runs without HEARTH_REQUIRE_POSTGRES=1: %s", l)
		}
		out = dry(t, "SKIP_POSTGRES=1")
		if strings.Contains(out, "postgresql") || strings.Contains(goTest(t, out), "HEARTH_REQUIRE_POSTGRES") {
			t.Errorf("SKIP_POSTGRES=1 still checks for or requires PostgreSQL:\n%s", out)
		}
	})
}

// withoutMake drops an outer make's state from env: under make test, its
// MAKEFLAGS (jobserver, -n) must not leak into a make the test starts.
func withoutMake(env []string) []string {
	var out []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if !slices.Contains([]string{"MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES"}, k) {
			out = append(out, kv)
		}
	}
	return out
}

// TestReadme_MakeCommands holds every `make` command in the README's and
// docs/running.md's sh blocks to the Makefile: the target exists and every
// VAR=value names a variable the Makefile sets.
func TestReadme_MakeCommands(t *testing.T) {
	t.Parallel()
	mk, err := os.ReadFile(filepath.Join(repoRoot, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	makefile := string(mk)
	seen := 0
	for _, name := range []string{"README.md", "docs/running.md"} {
		for _, f := range fences(t, name) {
			if f.lang != "sh" {
				continue
			}
			for _, words := range shellCommands(t, f.code) {
				cmd := strings.Join(words, " ")
				if words[0] != "make" {
					continue
				}
				seen++
				for _, w := range words[1:] {
					if k, _, ok := strings.Cut(w, "="); ok {
						if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(k) + ` *[:?]?=`).MatchString(makefile) {
							t.Errorf("%s:%d: %q: the Makefile sets no variable %s", name, f.line, cmd, k)
						}
						continue
					}
					if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(w) + `:`).MatchString(makefile) {
						t.Errorf("%s:%d: %q: the Makefile has no target %s", name, f.line, cmd, w)
					}
				}
			}
		}
	}
	if seen == 0 {
		t.Fatal("no make commands found: the README starts with make run")
	}
}

// shellCommands splits a block into commands, each as its words, for the
// shell syntax the docs use: single and double quotes (which may span
// lines), backslash-newline continuations, comments; no expansion.
func shellCommands(tb testing.TB, code string) [][]string {
	tb.Helper()
	var cmds [][]string
	var words []string
	var cur strings.Builder
	inWord, comment := false, false
	var quote rune
	endWord := func() {
		if inWord {
			words = append(words, cur.String())
			cur.Reset()
			inWord = false
		}
	}
	rs := []rune(code)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case comment:
			if r == '\n' {
				comment = false
				i--
			}
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '\\' && i+1 < len(rs) && rs[i+1] == '\n':
			i++
			endWord()
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == '#' && !inWord:
			comment = true
		case r == ' ' || r == '\t':
			endWord()
		case r == '\n':
			endWord()
			if len(words) > 0 {
				cmds = append(cmds, words)
				words = nil
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		tb.Fatalf("unclosed quote in %q", code)
	}
	endWord()
	if len(words) > 0 {
		cmds = append(cmds, words)
	}
	return cmds
}

// dockerInstruction is one Dockerfile instruction, continuation lines joined.
type dockerInstruction struct{ cmd, args string }

func readDockerfile(tb testing.TB, path string) []dockerInstruction {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	var out []dockerInstruction
	var cur strings.Builder
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "#") || (line == "" && cur.Len() == 0) {
			continue
		}
		more := strings.HasSuffix(line, `\`)
		cur.WriteString(strings.TrimSuffix(line, `\`))
		if more {
			cur.WriteByte(' ')
			continue
		}
		cmd, args, _ := strings.Cut(strings.TrimSpace(cur.String()), " ")
		out = append(out, dockerInstruction{strings.ToUpper(cmd), strings.TrimSpace(args)})
		cur.Reset()
	}
	return out
}

// dockerValueFlags are the docker flags the docs use that take a value.
var dockerValueFlags = map[string]bool{
	"-f": true, "-t": true, "--build-arg": true, "--platform": true,
	"--name": true, "--restart": true, "-p": true, "-v": true, "-e": true,
}

// dockerHelpFlags returns the flags `docker <sub> --help` lists, or nil
// when no Docker client is installed.
func dockerHelpFlags(tb testing.TB, sub string) map[string]bool {
	tb.Helper()
	if _, err := exec.LookPath("docker"); err != nil {
		return nil
	}
	out, err := exec.Command("docker", sub, "--help").CombinedOutput()
	if err != nil {
		tb.Fatalf("docker %s --help: %v\n%s", sub, err, out)
	}
	flags := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\s+(?:(-\w), )?(--[\w-]+)`).FindAllStringSubmatch(string(out), -1) {
		flags[m[2]] = true
		if m[1] != "" {
			flags[m[1]] = true
		}
	}
	return flags
}

// checkServeArgs parses args (what follows `hearth serve`) with serve's own
// flag parser, the --data value replaced by a temp dir so no options.json
// of the machine is read, and returns the --data value as written.
func checkServeArgs(t *testing.T, where string, args []string) string {
	t.Helper()
	args = slices.Clone(args)
	data := ""
	for i, a := range args {
		if a == "--data" && i+1 < len(args) {
			data, args[i+1] = args[i+1], t.TempDir()
		}
	}
	if data == "" {
		t.Errorf("%s: no --data", where)
	}
	var stderr bytes.Buffer
	if _, err := parseServeFlags(args, &stderr); err != nil {
		t.Errorf("%s: hearth serve %s: %v %s", where, strings.Join(args, " "), err, stderr.String())
	}
	return data
}

// TestDocs_Running checks docs/running.md and docs/hearth.service against
// what they name: hearth serve's flags, the add-on's Dockerfile, the docker
// client's flags and systemd's unit checker (where installed), and the
// options parser for every options.json example. No Docker engine is
// needed: the docker lines are checked by reading, not run.
func TestDocs_Running(t *testing.T) {
	t.Parallel()
	t.Run("OptionsExamples", func(t *testing.T) {
		n := 0
		for _, f := range fences(t, "docs/running.md") {
			if f.lang != "json" {
				continue
			}
			n++
			if _, err := options.Parse(strings.NewReader(f.code)); err != nil {
				t.Errorf("docs/running.md:%d: options.json example: %v", f.line, err)
			}
		}
		if n == 0 {
			t.Error("docs/running.md has no options.json example")
		}
	})

	t.Run("SystemdUnit", func(t *testing.T) {
		unit, err := os.ReadFile(filepath.Join(repoRoot, "docs", "hearth.service"))
		if err != nil {
			t.Fatal(err)
		}
		keys := map[string]string{}
		for _, l := range strings.Split(string(unit), "\n") {
			if k, v, ok := strings.Cut(l, "="); ok && !strings.HasPrefix(l, "#") {
				keys[k] = v
			}
		}
		execStart := strings.Fields(keys["ExecStart"])
		if len(execStart) < 2 || filepath.Base(execStart[0]) != "hearth" || execStart[1] != "serve" {
			t.Fatalf("ExecStart = %q, want hearth serve …", keys["ExecStart"])
		}
		data := checkServeArgs(t, "docs/hearth.service ExecStart", execStart[2:])
		if want := "/var/lib/" + keys["StateDirectory"]; keys["StateDirectory"] == "" || data != want {
			t.Errorf("--data %s, StateDirectory=%s: want --data %s", data, keys["StateDirectory"], want)
		}
		if !strings.Contains(string(unit), "RestartPreventExitStatus=2") {
			t.Error("the unit must not restart on exit status 2 (an option error)")
		}
		analyze, err := exec.LookPath("systemd-analyze")
		if err != nil {
			t.Log("systemd-analyze is not installed: the unit's syntax is not verified")
			return
		}
		// systemd-analyze verify insists the ExecStart binary exists: point
		// it at this test binary (an executable) in a copy of the unit.
		self, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		cp := filepath.Join(t.TempDir(), "hearth.service")
		if err := os.WriteFile(cp, bytes.Replace(unit, []byte(execStart[0]), []byte(self), 1), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(analyze, "verify", cp).CombinedOutput(); err != nil || len(bytes.TrimSpace(out)) > 0 {
			t.Errorf("systemd-analyze verify: %v\n%s", err, out)
		}
	})

	t.Run("Docker", func(t *testing.T) {
		var builds, runs [][]string
		for _, f := range fences(t, "docs/running.md") {
			if f.lang != "sh" {
				continue
			}
			for _, w := range shellCommands(t, f.code) {
				if len(w) >= 2 && w[0] == "docker" && w[1] == "build" {
					builds = append(builds, w)
				}
				if len(w) >= 2 && w[0] == "docker" && w[1] == "run" {
					runs = append(runs, w)
				}
			}
		}
		if len(builds) == 0 || len(runs) == 0 {
			t.Fatalf("docs/running.md: %d docker build and %d docker run lines, want both", len(builds), len(runs))
		}
		tags := map[string]string{} // tag -> Dockerfile
		for _, w := range builds {
			flags, pos := dockerArgs(t, w, dockerHelpFlags(t, "build"))
			if len(pos) != 1 {
				t.Fatalf("%q: want one build context, got %q", strings.Join(w, " "), pos)
			}
			ctxDir := filepath.Join(repoRoot, pos[0])
			file := filepath.Join(ctxDir, "Dockerfile")
			if fs := flags["-f"]; len(fs) > 0 {
				file = filepath.Join(ctxDir, fs[0])
			}
			ins := readDockerfile(t, file)
			args := map[string]bool{}
			for _, in := range ins {
				if in.cmd == "ARG" {
					k, _, _ := strings.Cut(in.args, "=")
					args[k] = true
				}
				// Everything the build copies from the context is there.
				if in.cmd == "COPY" && !strings.HasPrefix(in.args, "--from") {
					srcs := strings.Fields(in.args)
					for _, s := range srcs[:len(srcs)-1] {
						if _, err := os.Stat(filepath.Join(ctxDir, s)); err != nil {
							t.Errorf("%s: COPY %s: not in the build context %s", file, s, pos[0])
						}
					}
				}
			}
			for _, ba := range flags["--build-arg"] {
				k, _, _ := strings.Cut(ba, "=")
				if !args[k] {
					t.Errorf("--build-arg %s: %s declares no ARG %s", ba, file, k)
				}
			}
			for _, tag := range flags["-t"] {
				tags[tag] = file
			}
		}
		for _, w := range runs {
			flags, pos := dockerArgs(t, w, dockerHelpFlags(t, "run"))
			if len(pos) == 0 {
				t.Fatalf("%q: no image", strings.Join(w, " "))
			}
			file, ok := tags[pos[0]]
			if !ok {
				t.Fatalf("%q: image %s is not one the docs build (%v)", strings.Join(w, " "), pos[0], slices.Sorted(maps.Keys(tags)))
			}
			ins := readDockerfile(t, file)
			exposed := map[string]bool{}
			var entry, command []string
			for _, in := range ins {
				switch in.cmd {
				case "EXPOSE":
					for _, p := range strings.Fields(in.args) {
						exposed[strings.TrimSuffix(p, "/tcp")] = true
					}
				case "ENTRYPOINT":
					entry = execForm(t, in.args)
				case "CMD":
					command = execForm(t, in.args)
				}
			}
			if len(entry) != 1 || filepath.Base(entry[0]) != "hearth" {
				t.Fatalf("%s: ENTRYPOINT %q, want the hearth binary", file, entry)
			}
			if len(pos) > 1 {
				command = pos[1:] // flags after the image replace CMD
			}
			if len(command) == 0 || command[0] != "serve" {
				t.Fatalf("%q: the container runs hearth %q, want serve", strings.Join(w, " "), command)
			}
			data := checkServeArgs(t, strings.Join(w, " "), command[1:])
			for _, p := range flags["-p"] {
				parts := strings.Split(p, ":")
				if c := strings.TrimSuffix(parts[len(parts)-1], "/tcp"); !exposed[c] {
					t.Errorf("-p %s: %s does not EXPOSE %s", p, file, c)
				}
			}
			vols := 0
			for _, v := range flags["-v"] {
				parts := strings.Split(v, ":")
				if len(parts) < 2 || parts[1] != data {
					t.Errorf("-v %s: the container's data dir is %s", v, data)
				}
				vols++
			}
			if vols == 0 {
				t.Errorf("%q: no volume for the data dir %s", strings.Join(w, " "), data)
			}
		}
	})
}

// dockerArgs splits a docker build/run command into its flags (name to
// values) and positional arguments, checking every flag against help (when
// not nil). After the first positional argument, everything is positional
// (the image's command).
func dockerArgs(t *testing.T, w []string, help map[string]bool) (map[string][]string, []string) {
	t.Helper()
	flags := map[string][]string{}
	var pos []string
	for i := 2; i < len(w); i++ {
		a := w[i]
		if len(pos) > 0 || !strings.HasPrefix(a, "-") {
			pos = append(pos, a)
			continue
		}
		name, val, hasVal := strings.Cut(a, "=")
		if help != nil && !help[name] {
			t.Errorf("%q: docker %s has no flag %s", strings.Join(w, " "), w[1], name)
		}
		if dockerValueFlags[name] && !hasVal {
			if i+1 >= len(w) {
				t.Fatalf("%q: %s needs a value", strings.Join(w, " "), name)
			}
			i++
			val = w[i]
		} else if !dockerValueFlags[name] && strings.HasPrefix(name, "-") && len(name) > 2 && !strings.HasPrefix(name, "--") {
			t.Fatalf("%q: combined short flags %s: write them apart", strings.Join(w, " "), name)
		}
		flags[name] = append(flags[name], val)
	}
	return flags, pos
}

func execForm(tb testing.TB, s string) []string {
	tb.Helper()
	var out []string
	if err := json.Unmarshal([]byte(s), &out); err != nil {
		tb.Fatalf("not exec form: %s: %v", s, err)
	}
	return out
}

// TestReadme_Toolchain: the README names the Go toolchain of go.mod's
// toolchain line, which the Makefile lets the go command fetch.
func TestReadme_Toolchain(t *testing.T) {
	t.Parallel()
	mod, err := os.ReadFile(filepath.Join(repoRoot, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^toolchain go(\S+)$`).FindSubmatch(mod)
	if m == nil {
		t.Fatal("go.mod has no toolchain line")
	}
	if readme := words(t, "README.md"); !strings.Contains(readme, "(Go "+string(m[1])+")") {
		t.Errorf("README.md does not name the toolchain go.mod does, Go %s", m[1])
	}
	mk, err := os.ReadFile(filepath.Join(repoRoot, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^export GOTOOLCHAIN \?= auto$`).Match(mk) {
		t.Error("the Makefile does not set GOTOOLCHAIN=auto for its targets")
	}
}

// TestMakefile_Help: make help shows the values of the variables its
// descriptions name, never a literal $(NAME).
func TestMakefile_Help(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("make", "-C", root, "--no-print-directory", "help", "LISTEN=10.1.2.3:9999", "DATA=/srv/hearth-data")
	cmd.Env = withoutMake(os.Environ())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make help: %v\n%s", err, out)
	}
	if strings.Contains(string(out), "$(") {
		t.Errorf("make help prints a variable's name, not its value:\n%s", out)
	}
	for _, want := range []string{"10.1.2.3:9999", "/srv/hearth-data", "install "} {
		if !strings.Contains(string(out), want) {
			t.Errorf("make help lacks %q:\n%s", want, out)
		}
	}
}

// TestMakefile_Install: make install puts hearth in GOBIN when Go names
// one (go env GOBIN), else in ~/.local/bin (from a dry run).
func TestMakefile_Install(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	// GOTOOLCHAIN=local: no toolchain download into the made-up HOME.
	env := append(withoutMake(os.Environ()), "HOME=/home/someone", "GOTOOLCHAIN=local")
	// With GOBIN unset, Go 1.26 names no GOBIN and Go 1.27 names
	// $GOPATH/bin: where go install puts commands, which make install follows.
	unset := "/home/someone/.local/bin/hearth"
	goenv := exec.Command("go", "env", "GOBIN")
	goenv.Env = append(env, "GOBIN=")
	if out, err := goenv.Output(); err != nil {
		t.Fatalf("go env GOBIN: %v", err)
	} else if dir := strings.TrimSpace(string(out)); dir != "" {
		unset = dir + "/hearth"
	}
	for _, c := range []struct{ gobin, want string }{
		{"", unset},
		{"/opt/gobin", "/opt/gobin/hearth"},
	} {
		cmd := exec.Command("make", "-C", root, "--no-print-directory", "-n", "install")
		cmd.Env = append(env, "GOBIN="+c.gobin)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("make -n install: %v\n%s", err, out)
		}
		if !regexp.MustCompile(`(?m)^install -m 0755 \S+/hearth ` + regexp.QuoteMeta(c.want) + `$`).Match(out) {
			t.Errorf("GOBIN=%q: make install does not install %s:\n%s", c.gobin, c.want, out)
		}
	}
}

package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hearth-memory/hearth/server/version"
)

// helpCommands are every subcommand and sub-subcommand whose help the CLI
// test walks, each with the positional arguments its usage line must name.
var helpCommands = []struct {
	args        []string
	positionals []string
}{
	{[]string{"serve"}, nil},
	{[]string{"version"}, nil},
	{[]string{"healthcheck"}, nil},
	{[]string{"connect"}, []string{"claude-code|codex"}},
	{[]string{"connect", "claude-code"}, []string{"claude-code|codex"}},
	{[]string{"hook"}, []string{"EVENT"}},
	{[]string{"hook", "session-start"}, []string{"EVENT"}},
	{[]string{"hook", "prompt"}, []string{"EVENT"}},
	{[]string{"hook", "session-end"}, []string{"EVENT"}},
	{[]string{"hook", "mcp-headers"}, []string{"EVENT"}},
	{[]string{"backup"}, nil},
	{[]string{"restore"}, []string{"FILE"}},
	{[]string{"export"}, nil},
	{[]string{"import"}, []string{"FILE"}},
	{[]string{"token"}, []string{"rotate|show"}},
	{[]string{"token", "rotate"}, nil},
	{[]string{"token", "show"}, nil},
	{[]string{"metrics"}, nil},
	{[]string{"completion"}, []string{"bash"}},
}

// TestCLI_Help walks every subcommand's help (issue 42): -h, --help and
// `hearth help CMD` print the usage on stdout, nothing on stderr, and exit
// 0; the usage line names the command and its positional arguments, and
// every flag is listed with two dashes. Every command of hearth --help is
// walked.
func TestCLI_Help(t *testing.T) {
	t.Parallel()
	walked := map[string]bool{}
	for _, c := range helpCommands {
		walked[c.args[0]] = true
		for _, help := range [][]string{{"-h"}, {"--help"}} {
			args := append(append([]string(nil), c.args...), help...)
			var out, errOut bytes.Buffer
			code := run(context.Background(), args, &out, &errOut)
			name := strings.Join(args, " ")
			if code != 0 || errOut.Len() > 0 {
				t.Errorf("hearth %s: exit %d, stderr %q; want 0 and nothing", name, code, errOut.String())
			}
			first, _, _ := strings.Cut(out.String(), "\n")
			if !strings.HasPrefix(first, "usage: hearth "+c.args[0]) {
				t.Errorf("hearth %s: first line %q, want its usage", name, first)
			}
			for _, p := range c.positionals {
				if !strings.Contains(first, p) {
					t.Errorf("hearth %s: usage line %q does not name %s", name, first, p)
				}
			}
			if regexp.MustCompile(`(?m)^\s+-[a-z]`).MatchString(out.String()) {
				t.Errorf("hearth %s: a flag listed with one dash:\n%s", name, out.String())
			}
		}
	}
	var top bytes.Buffer
	if code := run(context.Background(), []string{"--help"}, &top, &top); code != 0 {
		t.Fatalf("hearth --help: exit %d", code)
	}
	listed := regexp.MustCompile(`(?m)^  ([a-z]+)  `).FindAllStringSubmatch(top.String(), -1)
	if len(listed) < 10 {
		t.Fatalf("hearth --help lists %d commands:\n%s", len(listed), top.String())
	}
	for _, m := range listed {
		if !walked[m[1]] {
			t.Errorf("hearth %s is listed by hearth --help but its help is not walked", m[1])
		}
		var out, errOut bytes.Buffer
		if code := run(context.Background(), []string{"help", m[1]}, &out, &errOut); code != 0 || !strings.HasPrefix(out.String(), "usage: hearth "+m[1]) {
			t.Errorf("hearth help %s: exit %d, %q", m[1], code, out.String())
		}
	}
}

// TestCLI_Version: hearth --version and hearth version print the version.
func TestCLI_Version(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"--version"}, {"version"}} {
		code, out, errOut := cli(t, args...)
		if code != 0 || out != version.Version+"\n" || errOut != "" {
			t.Errorf("hearth %s: exit %d, %q %q; want %q", strings.Join(args, " "), code, out, errOut, version.Version)
		}
	}
}

// TestCLI_UsageErr: a usage error is said on stderr with how to get the
// usage, and exits 2, with nothing on stdout.
func TestCLI_UsageErr(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"restore", "--data", t.TempDir()},
		{"import", "--token-file", "x"},
		{"backup", "--bogus"},
		{"token", "spin"},
		{"token", "rotate"},
		{"connect", "codex", "extra"},
		{"completion", "tcsh"},
		{"version", "now"},
		{"healthcheck", "--url", "ftp://x"},
	} {
		code, out, errOut := cli(t, args...)
		if code != 2 || out != "" || !strings.Contains(errOut, "--help' for its usage") {
			t.Errorf("hearth %s: exit %d, stdout %q, stderr %q; want 2 and the way to the usage", strings.Join(args, " "), code, out, errOut)
		}
	}
}

// TestCLI_URL: every command that talks to a server takes --url as the
// server's base URL, defaulting to HEARTH_URL: healthcheck reaches the
// daemon from HEARTH_URL alone and from --url, with or without the
// /healthz of old; export finds the daemon from HEARTH_URL. Not parallel:
// it sets HEARTH_URL for the process.
func TestCLI_URL(t *testing.T) {
	td := startDaemon(t, testOptions())
	for _, args := range [][]string{
		{"healthcheck", "--url", td.url},
		{"healthcheck", "--url", td.url + "/"},
		{"healthcheck", "--url", td.url + "/healthz"},
	} {
		if code, _, errOut := cli(t, args...); code != 0 {
			t.Errorf("hearth %s: exit %d %s", strings.Join(args, " "), code, errOut)
		}
	}
	t.Setenv("HEARTH_URL", td.url)
	if code, _, errOut := cli(t, "healthcheck"); code != 0 {
		t.Errorf("hearth healthcheck with HEARTH_URL: exit %d %s", code, errOut)
	}
	if code, _, errOut := cli(t, "export", "--token-file", tokenFile(td, "claude-code")); code != 1 || !strings.Contains(errOut, "PERMISSION_DENIED") {
		// claude-code has no export scope: the call reached the server.
		t.Errorf("hearth export with HEARTH_URL: exit %d %s; want the server's refusal", code, errOut)
	}
	t.Setenv("HEARTH_URL", "http://127.0.0.1:1")
	if code, _, _ := cli(t, "healthcheck"); code != 1 {
		t.Errorf("hearth healthcheck with HEARTH_URL at a closed port: exit %d, want 1", code)
	}
}

// TestCLI_Completion: the bash completion script completes commands,
// sub-commands and each command's flags, run by bash itself.
func TestCLI_Completion(t *testing.T) {
	t.Parallel()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	code, script, errOut := cli(t, "completion", "bash")
	if code != 0 {
		t.Fatalf("exit %d %s", code, errOut)
	}
	file := filepath.Join(t.TempDir(), "hearth.bash")
	if err := os.WriteFile(file, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		line string
		want []string
	}{
		{"hearth to", []string{"token"}},
		{"hearth token r", []string{"rotate"}},
		{"hearth connect c", []string{"claude-code", "codex", "copilot"}},
		{"hearth backup --o", []string{"--out"}},
		{"hearth token rotate --cl", []string{"--client"}},
		{"hearth token show --re", []string{"--reveal"}},
		{"hearth import --as", []string{"--as-active"}},
		{"hearth serve --li", []string{"--listen"}},
	} {
		words := strings.Fields(c.line)
		cmd := exec.Command(bash, "--noprofile", "--norc", "-c",
			`source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(( $# - 1 )); _hearth; printf '%s\n' "${COMPREPLY[@]}"`,
			"x", file)
		cmd.Args = append(cmd.Args, words...)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%q: %v", c.line, err)
		}
		if got := strings.Fields(string(out)); strings.Join(got, " ") != strings.Join(c.want, " ") {
			t.Errorf("%q completes to %q, want %q", c.line, got, c.want)
		}
	}
}

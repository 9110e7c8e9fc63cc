package hook

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// TestParseGitConfig_OK reads the forms git writes and accepts.
func TestParseGitConfig_OK(t *testing.T) {
	t.Parallel()
	in := "\ufeff# a comment\n" +
		"[core]\n\trepositoryformatversion = 0\n\tbare = false ; trailing comment\n" +
		"[remote \"origin\"]\n\turl = git@github.com:Acme/API.git\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n" +
		"[Remote \"Up \\\"Stream\\\"\"] # comment after a header\n\tURL = \"https://x/y z\" # kept inside quotes\n" +
		"[branch.main]\n\tremote = origin\n" +
		"[alias]\n\tlg = log --graph \\\n  --oneline\n\tq = \"a\\tb\\nc\\\\\"\n\tflag\n" +
		"[url \"git@github.com:\"]\n\tinsteadOf = gh:\r\n"
	got, err := parseGitConfig(in)
	if err != nil {
		t.Fatalf("parseGitConfig: %v", err)
	}
	want := []gitEntry{
		{"core", "", "repositoryformatversion", "0"},
		{"core", "", "bare", "false"},
		{"remote", "origin", "url", "git@github.com:Acme/API.git"},
		{"remote", "origin", "fetch", "+refs/heads/*:refs/remotes/origin/*"},
		{"remote", `Up "Stream"`, "url", "https://x/y z"},
		{"branch", "main", "remote", "origin"},
		{"alias", "", "lg", "log --graph   --oneline"},
		{"alias", "", "q", "a\tb\nc\\"},
		{"alias", "", "flag", "true"},
		{"url", "git@github.com:", "insteadof", "gh:"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}
}

// TestParseGitConfig_ErrMalformed stops at a malformed line, keeping what
// came before, as git refuses such a file.
func TestParseGitConfig_ErrMalformed(t *testing.T) {
	t.Parallel()
	for _, in := range []string{
		"key = before any section\n",
		"[remote \"origin\"\n",
		"[remote origin]\n",
		"[core]\nname = \"unclosed\n",
		"[core]\nname = bad \\q escape\n",
		"[core]\n=value\n",
		"[core]\nname value\n",
	} {
		got, err := parseGitConfig(in)
		if !errors.Is(err, errGitConfig) {
			t.Errorf("parseGitConfig(%q) = %v, %v; want errGitConfig", in, got, err)
		}
	}
	got, _ := parseGitConfig("[remote \"origin\"]\nurl = a\n[broken\n")
	if len(got) != 1 || got[0].Value != "a" {
		t.Errorf("entries before the break = %v, want the url", got)
	}
}

// FuzzParseGitConfig: any input parses without panicking, and every entry
// has a lower-case section and key.
func FuzzParseGitConfig(f *testing.F) {
	f.Add("[remote \"origin\"]\n\turl = git@github.com:acme/api.git\n")
	f.Add("[core]\n\tx = \"a\\\"b\" ; c\n[url \"https://\"]\n\tinsteadOf = gh:\n")
	f.Add("[a.B]\nk = v \\\n w\n")
	f.Fuzz(func(t *testing.T, in string) {
		entries, _ := parseGitConfig(in)
		for _, e := range entries {
			if e.Section != strings.ToLower(e.Section) || e.Key != strings.ToLower(e.Key) || e.Key == "" {
				t.Fatalf("entry %q from %q", e, in)
			}
		}
	})
}

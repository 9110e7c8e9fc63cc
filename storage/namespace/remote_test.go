package namespace

import (
	"errors"
	"strings"
	"testing"
)

func TestParseRemote(t *testing.T) {
	ok := []struct {
		in   string
		want Remote
	}{
		{"https://github.com/Owner/Repo", Remote{Host: "github.com", Owner: "owner", Repo: "repo"}},
		{"https://github.com/Owner/Repo.git", Remote{Host: "github.com", Owner: "owner", Repo: "repo"}},
		{"https://github.com/Owner/Repo/", Remote{Host: "github.com", Owner: "owner", Repo: "repo"}},
		{"https://github.com/Owner/Repo.git/", Remote{Host: "github.com", Owner: "owner", Repo: "repo"}},
		{"HTTPS://GitHub.COM/Acme/API.git", Remote{Host: "github.com", Owner: "acme", Repo: "api"}},
		{"http://github.com/acme/api", Remote{Host: "github.com", Owner: "acme", Repo: "api"}},
		{"  https://github.com/acme/api.git\n", Remote{Host: "github.com", Owner: "acme", Repo: "api"}},
		{"git@github.com:owner/repo.git", Remote{Host: "github.com", Owner: "owner", Repo: "repo"}},
		{"git@github.com:owner/repo", Remote{Host: "github.com", Owner: "owner", Repo: "repo"}},
		{"git@github.com:/owner/repo.git", Remote{Host: "github.com", Owner: "owner", Repo: "repo"}},
		{"github.com:owner/repo.git", Remote{Host: "github.com", Owner: "owner", Repo: "repo"}},
		{"ssh://git@github.com/owner/repo.git", Remote{Host: "github.com", Owner: "owner", Repo: "repo"}},
		{"ssh://git@github.com:22/owner/repo.git", Remote{Host: "github.com", Owner: "owner", Repo: "repo"}},
		{"ssh://git@ssh.github.com:443/owner/repo.git", Remote{Host: "ssh.github.com", Owner: "owner", Repo: "repo"}},
		{"git+ssh://git@github.com/owner/repo", Remote{Host: "github.com", Owner: "owner", Repo: "repo"}},
		{"ssh+git://git@github.com/owner/repo", Remote{Host: "github.com", Owner: "owner", Repo: "repo"}},
		{"git://github.com/owner/repo.git", Remote{Host: "github.com", Owner: "owner", Repo: "repo"}},
		{"https://git.home.lan:3000/Team/Tools.git", Remote{Host: "git.home.lan", Owner: "team", Repo: "tools"}},
		{"ssh://git@[2001:DB8::1]:2222/team/tools.git", Remote{Host: "[2001:db8::1]", Owner: "team", Repo: "tools"}},
		{"git@[::1]:team/tools.git", Remote{Host: "[::1]", Owner: "team", Repo: "tools"}},
		{"https://github.com/acme/my.repo_v2-x.git", Remote{Host: "github.com", Owner: "acme", Repo: "my.repo_v2-x"}},
		{"https://github.com/acme/api.git?ref=main#readme", Remote{Host: "github.com", Owner: "acme", Repo: "api"}},
		{"https://github.com/acme/my%2Drepo", Remote{Host: "github.com", Owner: "acme", Repo: "my-repo"}},
		// User information is dropped, whatever it holds.
		{"https://x-access-token:ghp_0123456789abcdefABCDEF0123456789abcd@github.com/acme/api.git", Remote{Host: "github.com", Owner: "acme", Repo: "api"}},
		{"https://user:p@ss:w%2Frd@github.com/acme/api.git", Remote{Host: "github.com", Owner: "acme", Repo: "api"}},
		{"user:s3cr:et@github.com:acme/api.git", Remote{Host: "github.com", Owner: "acme", Repo: "api"}},
	}
	for _, c := range ok {
		got, err := ParseRemote(c.in)
		if err == nil && !strings.EqualFold(got.Path, got.Owner+"/"+got.Repo) {
			t.Errorf("ParseRemote(%q).Path = %q; want %s/%s in any case", c.in, got.Path, got.Owner, got.Repo)
		}
		got.Path = ""
		if err != nil || got != c.want {
			t.Errorf("ParseRemote(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}

	bad := []struct {
		in, want, local string
	}{
		{"", "is empty", ""},
		{"   ", "is empty", ""},
		{"https://github.com/acme", "exactly owner/repository", ""},
		{"https://github.com/", "must name owner/repository", ""},
		{"https://github.com", "must name owner/repository", ""},
		{"https://github.com/acme/api/tree/main", "not 4 path segments", ""},
		{"https://github.com/acme/.git", "repository name", ""},
		{"https://github.com/acme/..", "repository name", ""},
		{"https://github.com/ac me/api", "spaces or control", ""},
		{"https://github.com/acme/api\x00", "spaces or control", ""},
		{"https://github.com/acme/ap%ZZi", "percent-encoding", ""},
		{"https://github.com/ac+me/api", "owner may hold", ""},
		{"https://github.com/\u212Acme/api", "owner may hold", ""}, // Kelvin sign, not k
		{"https:///acme/api", "has no host", ""},
		{"https://user:pw@/acme/api", "has no host", ""},
		{"https://git_hub.com/acme/api", "invalid host name", ""},
		{"https://github.com:99999999/acme/api", "invalid port", ""},
		{"https://github.com:x/acme/api", "invalid port", ""},
		{"https://[::1/acme/api", "unclosed [", ""},
		{"https://[1.2.3.4]/acme/api", "invalid IPv6", ""},
		{"ftp://github.com/acme/api", "scheme ftp is not", ""},
		{"file:///srv/git/Tools.git", "path on disk", "local/tools"},
		{"/home/me/src/hearth", "path on disk", "local/hearth"},
		{"../hearth/.git", "path on disk", "local/hearth"},
		{"hearth", "path on disk", "local/hearth"},
		{`C:\src\Hearth`, "path on disk", "local/hearth"},
		{"/home/me/My Repo", "spaces or control", ""},
		{"/home/me/répo", "path on disk", "local/<name>"},
		{"https://github.com/" + strings.Repeat("a", 80) + "/" + strings.Repeat("b", 80), "at most 160", ""},
		{"https://github.com/a/" + strings.Repeat("b", MaxRemoteLen), "bytes; at most", ""},
	}
	for _, c := range bad {
		_, err := ParseRemote(c.in)
		var re *RemoteError
		if !errors.As(err, &re) {
			t.Errorf("ParseRemote(%q) = %v; want a *RemoteError", c.in, err)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseRemote(%q) error %q; want it to contain %q", c.in, err, c.want)
		}
		if re.Local != c.local {
			t.Errorf("ParseRemote(%q) suggests %q; want %q", c.in, re.Local, c.local)
		}
	}
}

// TestParseRemote_NoUserinfo checks that neither a result nor an error ever
// carries the user information of a remote, in any form.
func TestParseRemote_NoUserinfo(t *testing.T) {
	const secret = "hunter2hunter2"
	for _, in := range []string{
		"https://me:" + secret + "@github.com/acme/api.git",
		"https://me:" + secret + "@github.com/acme",
		"https://me:" + secret + "@nowhere",
		"https://me:" + secret + "@github.com:bad/acme/api",
		"ftp://me:" + secret + "@github.com/acme/api",
		"me:" + secret + "@github.com:acme/api.git",
		"me:" + secret + "@github.com:acme/a+pi.git",
		"ssh://" + secret + "@github.com/acme/api.git",
		secret + "@/srv/git/api.git",
	} {
		r, err := ParseRemote(in)
		for _, s := range []string{r.Host, r.Owner, r.Repo, r.Path, errString(err)} {
			if strings.Contains(s, secret) {
				t.Errorf("ParseRemote(%q) = %+v, %v: repeats the user information", in, r, err)
			}
		}
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// FuzzParseRemote holds ParseRemote's properties on any input: it never
// panics; an accepted remote makes valid github/ and gitea/ namespaces; and
// user information put in front of the input is never returned, in a result
// or an error.
func FuzzParseRemote(f *testing.F) {
	for _, s := range []string{
		"https://github.com/Owner/Repo.git/",
		"git@github.com:owner/repo.git",
		"ssh://git@github.com:22/owner/repo.git",
		"git://github.com/owner/repo",
		"https://u:p@git.home:3000/team/tools",
		"git@[::1]:team/tools.git",
		"file:///srv/git/tools.git",
		`C:\src\tools`,
		"https://github.com/acme/my%2Drepo?x#y",
	} {
		f.Add(s)
	}
	const marker = "zq9secretzq9"
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRemote(s)
		if err == nil {
			for _, kind := range []string{"github", "gitea"} {
				if verr := Validate(r.Namespace(kind)); verr != nil {
					t.Fatalf("ParseRemote(%q) = %+v, but %s is invalid: %v", s, r, r.Namespace(kind), verr)
				}
			}
			if r.Host == "" {
				t.Fatalf("ParseRemote(%q) accepted an empty host", s)
			}
			if !strings.EqualFold(r.Path, r.Owner+"/"+r.Repo) {
				t.Fatalf("ParseRemote(%q) = %+v: Path is not owner/repo", s, r)
			}
		} else {
			var re *RemoteError
			if !errors.As(err, &re) {
				t.Fatalf("ParseRemote(%q) = %T %v, want *RemoteError", s, err, err)
			}
			if re.Local != "" && re.Local != "local/<name>" && Validate(re.Local) != nil {
				t.Fatalf("ParseRemote(%q) suggests invalid %q", s, re.Local)
			}
		}
		if strings.Contains(strings.ToLower(s), marker) {
			return
		}
		for _, in := range []string{
			"https://me:" + marker + "@" + s,
			"ssh://" + marker + "@" + s,
			"me:" + marker + "@" + s,
		} {
			r, err := ParseRemote(in)
			for _, out := range []string{r.Host, r.Owner, r.Repo, r.Path, errString(err)} {
				if strings.Contains(strings.ToLower(out), marker) {
					t.Fatalf("ParseRemote(%q) = %+v, %v: repeats the user information", in, r, err)
				}
			}
		}
	})
}

package scope

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/hearth-memory/hearth/server/options"
	"github.com/hearth-memory/hearth/storage/screen"
)

// testOptions configures a forge, links, hubs and renames, and validates
// them as start-up would.
func testOptions(t *testing.T, edit func(*options.Options)) options.Options {
	t.Helper()
	o := options.Default()
	o.ForgeHosts = []string{"git.home.lan:3000", "[2001:db8::1]"}
	o.ProjectLinks = []options.ProjectLink{
		{Name: "platform", Namespaces: []string{"github/acme/api", "github/acme/web", "gitea/team/tools"}},
		{Name: "billing", Namespaces: []string{"github/acme/api", "github/oldco/ledger"}},
	}
	o.Hubs = []string{"projects/platform", "github/oldco/hub"}
	o.NamespaceRenames = []options.Rename{{From: "github/oldco", To: "github/newco"}}
	if edit != nil {
		edit(&o)
	}
	if err := o.Validate(); err != nil {
		t.Fatalf("options: %v", err)
	}
	return o
}

func TestResolver_FromRemote(t *testing.T) {
	t.Parallel()
	r := New(testOptions(t, nil))
	t.Run("OK", func(t *testing.T) {
		for _, c := range []struct{ remote, want string }{
			{"https://github.com/Acme/API.git", "github/acme/api"},
			{"git@github.com:acme/api.git", "github/acme/api"},
			{"ssh://git@ssh.github.com:443/acme/api.git", "github/acme/api"},
			{"git://github.com/acme/api", "github/acme/api"},
			{"https://git.home.lan:3000/Team/Tools.git", "gitea/team/tools"},
			{"ssh://git@git.home.lan:2222/team/tools.git", "gitea/team/tools"}, // any port of a forge host
			{"git@git.home.lan:team/tools.git", "gitea/team/tools"},
			{"ssh://git@[2001:db8::1]/team/tools", "gitea/team/tools"},
			{"https://github.com/OldCo/Ledger", "github/newco/ledger"}, // renamed
			{"https://tok:ghp_0123456789abcdefABCDEF0123456789abcd@github.com/acme/api.git", "github/acme/api"},
		} {
			got, err := r.FromRemote(c.remote)
			if err != nil || got != c.want {
				t.Errorf("FromRemote(%q) = %q, %v; want %q", c.remote, got, err, c.want)
			}
		}
	})
	t.Run("ErrHost", func(t *testing.T) {
		_, err := r.FromRemote("https://user:hunter2hunter2@gitlab.com/acme/api.git")
		if err == nil || !strings.Contains(err.Error(), "gitlab.com") || !strings.Contains(err.Error(), "local/api") {
			t.Fatalf("got %v; want a refusal naming the host and suggesting local/api", err)
		}
		if strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), "user") {
			t.Errorf("error %q repeats the user information", err)
		}
	})
	t.Run("ErrLocalPath", func(t *testing.T) {
		_, err := r.FromRemote("/home/me/src/hearth")
		if err == nil || !strings.Contains(err.Error(), "local/hearth") {
			t.Fatalf("got %v; want a suggestion of local/hearth", err)
		}
	})
	t.Run("ErrUnreadable", func(t *testing.T) {
		_, err := r.FromRemote("https://github.com/acme")
		if err == nil || !strings.Contains(err.Error(), "owner/repository") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("ErrScreened", func(t *testing.T) {
		// A token where the repository name should be: neither stored nor echoed.
		// The screen judges the remote as written: lower-cased, the AWS key
		// would no longer look like one.
		for _, remote := range []string{
			"https://github.com/acme/ghp_R8x2Kq9Lm4Tz7Vb1Nc6Hd3Fj5Wp0Ys8Ue2Ab",
			"git@github.com:AKIAQ3EGRT5ZKXLM7WPA/api.git",
		} {
			_, err := r.FromRemote(remote)
			var ref *screen.Refusal
			if !errors.As(err, &ref) || ref.Field != "remote" {
				t.Fatalf("FromRemote(%q) = %v; want a screen refusal of remote", remote, err)
			}
			if msg := strings.ToLower(err.Error()); strings.Contains(msg, "r8x2kq9") || strings.Contains(msg, "akiaq3") {
				t.Errorf("error %q repeats the secret", err)
			}
		}
	})
}

func TestResolver_Owners(t *testing.T) {
	t.Parallel()
	r := New(testOptions(t, func(o *options.Options) {
		o.GithubOwner = "acme"
		o.ForgeOwner = "team"
		o.ProjectLinks = nil
		o.Hubs = nil
		o.NamespaceRenames = []options.Rename{{From: "github/oldacme", To: "github/acme"}}
	}))
	for _, c := range []struct{ remote, want, err string }{
		{"git@github.com:acme/api.git", "github/acme/api", ""},
		{"git@github.com:oldacme/api.git", "github/acme/api", ""}, // renamed into the owner
		{"git@github.com:someone/api.git", "", "github_owner limits Hearth to repositories of acme"},
		{"https://git.home.lan/team/tools", "gitea/team/tools", ""},
		{"https://git.home.lan/other/tools", "", "forge_owner limits Hearth to repositories of team"},
	} {
		got, err := r.FromRemote(c.remote)
		if c.err == "" && (err != nil || got != c.want) {
			t.Errorf("FromRemote(%q) = %q, %v; want %q", c.remote, got, err, c.want)
		}
		if c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
			t.Errorf("FromRemote(%q) = %q, %v; want error %q", c.remote, got, err, c.err)
		}
	}
	// A namespace given by name meets the same limits.
	if _, err := r.Home("github/someone/api"); err == nil {
		t.Errorf("Home(github/someone/api): want a refusal")
	}
	for _, ns := range []string{"github/acme/x", "gitea/team/x", "local/x", "projects/p", "topics/t", "global"} {
		if got, err := r.Home(ns); err != nil || got != ns {
			t.Errorf("Home(%q) = %q, %v", ns, got, err)
		}
	}
}

func TestResolver_Chain(t *testing.T) {
	t.Parallel()
	r := New(testOptions(t, nil))
	for _, c := range []struct {
		home   string
		topics []string
		want   []string
	}{
		{"github/acme/api", nil, []string{"github/acme/api", "projects/platform", "projects/billing", "global"}},
		{"github/acme/api", []string{"go", "sqlite"}, []string{"github/acme/api", "projects/platform", "projects/billing", "topics/go", "topics/sqlite", "global"}},
		{"github/acme/web", []string{"go"}, []string{"github/acme/web", "projects/platform", "topics/go", "global"}},
		{"github/newco/ledger", nil, []string{"github/newco/ledger", "projects/billing", "global"}}, // link read through the rename
		{"github/acme/other", []string{"go"}, []string{"github/acme/other", "topics/go", "global"}},
		{"projects/platform", []string{"go"}, []string{"projects/platform", "topics/go", "global"}},
		{"topics/go", []string{"go", "ci"}, []string{"topics/go", "topics/ci", "global"}},
		{"global", []string{"go"}, []string{"global", "topics/go"}},
		{"local/scratch", nil, []string{"local/scratch", "global"}},
	} {
		if got := r.Chain(c.home, c.topics); !slices.Equal(got, c.want) {
			t.Errorf("Chain(%q, %v) = %v; want %v", c.home, c.topics, got, c.want)
		}
	}
}

func TestResolver_Hubs(t *testing.T) {
	t.Parallel()
	r := New(testOptions(t, nil))
	for ns, want := range map[string]bool{
		"projects/platform":   true,
		"github/newco/hub":    true, // configured as github/oldco/hub, then renamed
		"github/oldco/hub":    false,
		"github/acme/api":     false,
		"global":              false,
		"projects/billing":    false,
		"topics/platform":     false,
		"github/acme/platfor": false,
	} {
		if got := r.IsHub(ns); got != want {
			t.Errorf("IsHub(%q) = %v; want %v", ns, got, want)
		}
	}
	for ns, want := range map[string]bool{
		"github/a/b": true, "gitea/a/b": true, "local/x": true,
		"projects/p": false, "topics/t": false, "global": false, "githubx/a/b": false,
	} {
		if got := IsRepository(ns); got != want {
			t.Errorf("IsRepository(%q) = %v; want %v", ns, got, want)
		}
	}
}

func TestResolver_Rename(t *testing.T) {
	t.Parallel()
	r := New(testOptions(t, func(o *options.Options) {
		o.NamespaceRenames = []options.Rename{{From: "github/old", To: "gitea/new"}, {From: "gitea/x", To: "github/y"}}
	}))
	for in, want := range map[string]string{
		"github/old/repo":    "gitea/new/repo",
		"github/older/repo":  "github/older/repo", // a prefix of the owner is not the owner
		"gitea/x/r":          "github/y/r",
		"projects/github":    "projects/github",
		"github/new/old":     "github/new/old",
		"local/github-old-x": "local/github-old-x",
	} {
		if got := r.Rename(in); got != want {
			t.Errorf("Rename(%q) = %q; want %q", in, got, want)
		}
	}
}

func BenchmarkResolver_FromRemote(b *testing.B) {
	o := options.Default()
	o.ForgeHosts = []string{"git.home.lan:3000"}
	o.ProjectLinks = []options.ProjectLink{{Name: "platform", Namespaces: []string{"github/acme/api"}}}
	r := New(o)
	for b.Loop() {
		ns, err := r.FromRemote("git@github.com:Acme/API.git")
		if err != nil || ns != "github/acme/api" {
			b.Fatal(ns, err)
		}
		_ = r.Chain(ns, []string{"go"})
	}
}

package hook

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// gitCmd runs the real git in dir with a config of its own (no user or
// system config), failing the test on error.
func gitCmd(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "protocol.file.allow=always", "-c", "init.defaultBranch=main"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func needGit(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
}

// newRepo makes a repository with one commit under a fresh directory.
func newRepo(t *testing.T, name string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	if err := os.MkdirAll(filepath.Join(dir, "src", "deep"), 0o755); err != nil {
		t.Fatal(err)
	}
	gitCmd(t, dir, "init", "-q")
	if err := os.WriteFile(filepath.Join(dir, "README"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitCmd(t, dir, "add", "README")
	gitCmd(t, dir, "commit", "-q", "-m", "init")
	return dir
}

func noEnv(string) string { return "" }

func envOf(kv map[string]string) func(string) string {
	return func(k string) string { return kv[k] }
}

// TestDiscoverRepo reads checkouts made by the real git: a plain clone-like
// repository, a linked worktree, a submodule, GIT_DIR, a repository without
// a remote, and no repository at all.
func TestDiscoverRepo(t *testing.T) {
	t.Parallel()
	needGit(t)
	t.Run("OK", func(t *testing.T) {
		dir := newRepo(t, "api")
		gitCmd(t, dir, "remote", "add", "upstream", "https://github.com/other/api.git")
		gitCmd(t, dir, "remote", "add", "origin", "git@github.com:Acme/API.git")
		got, err := DiscoverRepo(filepath.Join(dir, "src", "deep"), noEnv)
		if err != nil {
			t.Fatal(err)
		}
		if got.Root != dir || got.Remote != "git@github.com:Acme/API.git" {
			t.Errorf("got %+v, want root %s and origin (not the first remote)", got, dir)
		}
		if sc := got.Scope(); sc.Remote != "https://github.com/Acme/API" || sc.Namespace != "local/api" {
			t.Errorf("Scope = %+v, want the https remote and fallback local/api", sc)
		}
	})
	t.Run("OKFirstRemoteWithoutOrigin", func(t *testing.T) {
		dir := newRepo(t, "api")
		gitCmd(t, dir, "remote", "add", "upstream", "https://gitea.lan/team/api.git")
		gitCmd(t, dir, "remote", "add", "mirror", "https://github.com/m/api.git")
		got, _ := DiscoverRepo(dir, noEnv)
		if got.Remote != "https://gitea.lan/team/api.git" {
			t.Errorf("Remote = %q, want the first remote configured", got.Remote)
		}
	})
	t.Run("OKWorktree", func(t *testing.T) {
		dir := newRepo(t, "api")
		gitCmd(t, dir, "remote", "add", "origin", "https://github.com/acme/api.git")
		wt := filepath.Join(t.TempDir(), "api-feature")
		gitCmd(t, dir, "worktree", "add", "-q", "-b", "feature", wt)
		if fi, err := os.Stat(filepath.Join(wt, ".git")); err != nil || fi.IsDir() {
			t.Fatalf("worktree .git = %v, %v; want a file", fi, err)
		}
		got, err := DiscoverRepo(filepath.Join(wt, "src"), noEnv)
		if err != nil {
			t.Fatal(err)
		}
		if got.Root != wt || got.Remote != "https://github.com/acme/api.git" {
			t.Errorf("got %+v, want root %s and the main repository's origin", got, wt)
		}
	})
	t.Run("OKSubmodule", func(t *testing.T) {
		lib := newRepo(t, "lib")
		dir := newRepo(t, "app")
		gitCmd(t, dir, "remote", "add", "origin", "https://github.com/acme/app.git")
		gitCmd(t, dir, "submodule", "add", "-q", lib, "vendor/lib")
		// The submodule's own origin is the path it was cloned from; set a
		// forge URL as a user would have.
		gitCmd(t, filepath.Join(dir, "vendor", "lib"), "remote", "set-url", "origin", "git@github.com:acme/lib.git")
		got, err := DiscoverRepo(filepath.Join(dir, "vendor", "lib"), noEnv)
		if err != nil {
			t.Fatal(err)
		}
		if got.Root != filepath.Join(dir, "vendor", "lib") || got.Remote != "git@github.com:acme/lib.git" {
			t.Errorf("got %+v, want the submodule with its own remote", got)
		}
		top, _ := DiscoverRepo(filepath.Join(dir, "src"), noEnv)
		if top.Remote != "https://github.com/acme/app.git" {
			t.Errorf("superproject remote = %q", top.Remote)
		}
	})
	t.Run("OKGitDir", func(t *testing.T) {
		dir := newRepo(t, "api")
		gitCmd(t, dir, "remote", "add", "origin", "https://github.com/acme/api.git")
		elsewhere := t.TempDir()
		got, err := DiscoverRepo(elsewhere, envOf(map[string]string{"GIT_DIR": filepath.Join(dir, ".git"), "GIT_WORK_TREE": dir}))
		if err != nil {
			t.Fatal(err)
		}
		if got.Root != dir || got.Remote != "https://github.com/acme/api.git" {
			t.Errorf("got %+v, want GIT_DIR's repository", got)
		}
	})
	t.Run("OKNoRemote", func(t *testing.T) {
		dir := newRepo(t, "My Notes")
		got, err := DiscoverRepo(dir, noEnv)
		if err != nil {
			t.Fatal(err)
		}
		if got.Remote != "" || got.Scope() != (Scope{Namespace: "local/my-notes"}) {
			t.Errorf("got %+v scope %+v, want local/my-notes", got, got.Scope())
		}
	})
	t.Run("OKNoRepository", func(t *testing.T) {
		got, err := DiscoverRepo(t.TempDir(), noEnv)
		if err != nil {
			t.Fatal(err)
		}
		if got != (Repo{}) || got.Scope() != (Scope{Namespace: "global"}) {
			t.Errorf("got %+v, want no repository and global", got)
		}
	})
	t.Run("OKInsteadOfAndInclude", func(t *testing.T) {
		dir := newRepo(t, "api")
		home := t.TempDir()
		if err := os.WriteFile(filepath.Join(home, ".gitconfig"), []byte("[url \"git@github.com:\"]\n\tinsteadOf = gh:\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, ".git", "remotes.inc"), []byte("[remote \"origin\"]\n\turl = gh:acme/api.git\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		gitCmd(t, dir, "config", "include.path", "remotes.inc")
		got, err := DiscoverRepo(dir, envOf(map[string]string{"HOME": home}))
		if err != nil {
			t.Fatal(err)
		}
		if got.Remote != "git@github.com:acme/api.git" {
			t.Errorf("Remote = %q, want the included remote rewritten by insteadOf", got.Remote)
		}
	})
	t.Run("ErrBrokenGitFile", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, ".git"), []byte("not a gitdir line\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := DiscoverRepo(dir, noEnv); err == nil {
			t.Error("a .git file without gitdir: was accepted")
		}
	})
}

// TestRepo_Scope: what leaves the machine is a credential-free remote, or a
// namespace.
func TestRepo_Scope(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		repo Repo
		want Scope
	}{
		{"HTTPSWithCredentials", Repo{Root: "/src/api", Remote: "https://ann:s3cret@github.com/Acme/API.git"},
			Scope{Remote: "https://github.com/Acme/API", Namespace: "local/api"}},
		{"SCP", Repo{Root: "/src/x", Remote: "git@gitea.lan:team/tool.git"},
			Scope{Remote: "https://gitea.lan/team/tool", Namespace: "local/tool"}},
		{"SSHWithPort", Repo{Root: "/src/x", Remote: "ssh://git@gitea.lan:2222/team/tool.git"},
			Scope{Remote: "https://gitea.lan/team/tool", Namespace: "local/tool"}},
		{"LocalPath", Repo{Root: "/src/x", Remote: "/srv/git/Tool.git"}, Scope{Namespace: "local/tool"}},
		{"FileURL", Repo{Root: "/src/x", Remote: "file:///srv/git/tool"}, Scope{Namespace: "local/tool"}},
		{"NestedGroups", Repo{Root: "/src/Big App", Remote: "https://gitlab.com/a/b/c.git"}, Scope{Namespace: "local/big-app"}},
		{"NoRoot", Repo{}, Scope{Namespace: "global"}},
		{"UnnamableRoot", Repo{Root: "/src/..."}, Scope{Namespace: "global"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.repo.Scope()
			if got != tc.want {
				t.Errorf("Scope = %+v, want %+v", got, tc.want)
			}
			if strings.Contains(got.Remote, "s3cret") || strings.Contains(got.Remote, "@") {
				t.Errorf("Scope.Remote %q carries user information", got.Remote)
			}
		})
	}
}

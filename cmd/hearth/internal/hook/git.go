package hook

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/hearth-memory/hearth/storage/namespace"
)

// Repo is what the hooks know of the checkout a session runs in, read from
// git's own files (no git process: a hook has milliseconds).
type Repo struct {
	// Root is the top of the working tree; "" when cwd is in no repository.
	Root string
	// Remote is the chosen remote's URL as configured (url.<base>.insteadOf
	// applied); "" when the repository has none. It may carry credentials:
	// use Scope, never send or log it.
	Remote string
}

// maxIncludeDepth bounds [include] chains, as git does (10).
const maxIncludeDepth = 10

// DiscoverRepo finds the repository holding cwd and its remote. It honours
// GIT_DIR (and GIT_WORK_TREE) from env; otherwise it walks up from cwd to the
// first .git, which is a directory or a file "gitdir: <path>" (a linked
// worktree or a submodule). A git dir with a commondir file (a linked
// worktree) keeps its config in the common dir. Of the remotes, "origin" is
// preferred, else the first one configured. [include] paths are followed;
// url.<base>.insteadOf rewrites come from the repository's config and the
// user's global config.
//
// It returns a zero Repo and no error when cwd is in no repository, and an
// error only for a repository whose files cannot be read.
func DiscoverRepo(cwd string, env func(string) string) (Repo, error) {
	gitDir, root := "", ""
	if d := env("GIT_DIR"); d != "" {
		gitDir = absFrom(cwd, d)
		root = cwd
		if wt := env("GIT_WORK_TREE"); wt != "" {
			root = absFrom(cwd, wt)
		}
	} else {
		var err error
		if gitDir, root, err = findGitDir(cwd); err != nil || gitDir == "" {
			return Repo{}, err
		}
	}
	common := gitDir
	if b, err := readSmall(filepath.Join(gitDir, "commondir")); err == nil {
		common = absFrom(gitDir, strings.TrimSpace(b))
	} else if !errors.Is(err, os.ErrNotExist) {
		return Repo{}, err
	}
	var entries []gitEntry
	if err := readGitConfig(filepath.Join(common, "config"), env, 0, &entries); err != nil {
		return Repo{}, err
	}
	// A worktree's own config (extensions.worktreeConfig) may add remotes.
	if err := readGitConfig(filepath.Join(gitDir, "config.worktree"), env, 0, &entries); err != nil && !errors.Is(err, os.ErrNotExist) {
		return Repo{}, err
	}
	remote := chooseRemote(entries)
	if remote != "" {
		var global []gitEntry
		for _, p := range globalGitConfigs(env) {
			// The user's config only adds rewrites; a broken one is git's
			// problem to report, not ours.
			_ = readGitConfig(p, env, 0, &global)
		}
		remote = rewriteURL(remote, append(global, entries...))
	}
	return Repo{Root: filepath.Clean(root), Remote: remote}, nil
}

// findGitDir walks up from dir to the first .git entry.
func findGitDir(dir string) (gitDir, root string, err error) {
	dir = filepath.Clean(dir)
	for {
		p := filepath.Join(dir, ".git")
		fi, err := os.Stat(p)
		switch {
		case err == nil && fi.IsDir():
			return p, dir, nil
		case err == nil:
			b, err := readSmall(p)
			if err != nil {
				return "", "", err
			}
			line, _, _ := strings.Cut(b, "\n")
			target, ok := strings.CutPrefix(strings.TrimSpace(line), "gitdir:")
			if !ok || strings.TrimSpace(target) == "" {
				return "", "", errors.New(".git file without a gitdir line")
			}
			return absFrom(dir, strings.TrimSpace(target)), dir, nil
		case !errors.Is(err, os.ErrNotExist):
			return "", "", err
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", "", nil
		}
		dir = parent
	}
}

// readGitConfig appends the entries of the config file at path, and of the
// files its [include] path entries name, in order.
func readGitConfig(path string, env func(string) string, depth int, out *[]gitEntry) error {
	if depth > maxIncludeDepth {
		return errors.New("git config includes nest too deep")
	}
	data, err := readSmall(path)
	if err != nil {
		if depth > 0 && errors.Is(err, os.ErrNotExist) {
			return nil // git ignores a missing include
		}
		return err
	}
	entries, perr := parseGitConfig(data)
	for _, e := range entries {
		*out = append(*out, e)
		if e.Section == "include" && e.Subsection == "" && e.Key == "path" && e.Value != "" {
			inc := expandHome(e.Value, env)
			if !filepath.IsAbs(inc) {
				inc = filepath.Join(filepath.Dir(path), inc)
			}
			if err := readGitConfig(inc, env, depth+1, out); err != nil {
				return err
			}
		}
	}
	return perr
}

// chooseRemote returns origin's first url, else the first url of the first
// remote configured.
func chooseRemote(entries []gitEntry) string {
	first := ""
	for _, e := range entries {
		if e.Section != "remote" || e.Key != "url" || e.Value == "" {
			continue
		}
		if e.Subsection == "origin" {
			return e.Value
		}
		if first == "" {
			first = e.Value
		}
	}
	return first
}

// rewriteURL applies the longest matching url.<base>.insteadOf prefix.
func rewriteURL(u string, entries []gitEntry) string {
	best, base := "", ""
	for _, e := range entries {
		if e.Section == "url" && e.Key == "insteadof" && e.Value != "" &&
			strings.HasPrefix(u, e.Value) && len(e.Value) > len(best) {
			best, base = e.Value, e.Subsection
		}
	}
	if best == "" {
		return u
	}
	return base + u[len(best):]
}

// globalGitConfigs lists the user's git config files, as git reads them.
func globalGitConfigs(env func(string) string) []string {
	var out []string
	if x := env("XDG_CONFIG_HOME"); x != "" {
		out = append(out, filepath.Join(x, "git", "config"))
	} else if h := env("HOME"); h != "" {
		out = append(out, filepath.Join(h, ".config", "git", "config"))
	}
	if h := env("HOME"); h != "" {
		out = append(out, filepath.Join(h, ".gitconfig"))
	}
	return out
}

func expandHome(p string, env func(string) string) string {
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		if h := env("HOME"); h != "" {
			return filepath.Join(h, rest)
		}
	}
	return p
}

// absFrom resolves p against dir unless it is absolute.
func absFrom(dir, p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(dir, p)
}

// readSmall reads a file of at most maxGitConfigBytes.
func readSmall(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxGitConfigBytes+1))
	if err != nil {
		return "", err
	}
	if len(b) > maxGitConfigBytes {
		return "", errors.New("file larger than 1 MiB")
	}
	return string(b), nil
}

// Scope is where a hook's calls point: a remote (credentials dropped) for
// the server to turn into a namespace, with a namespace to fall back on
// when the server cannot (a host that is neither GitHub nor a forge host);
// or just a namespace.
type Scope struct {
	Remote    string
	Namespace string
}

// Scope returns where calls for r point. A remote Hearth can read is sent
// rebuilt from its host and path, so a user name or password in the
// configured URL never leaves the machine; Namespace is then the fallback
// local/<repository>. A checkout with no such remote is local/<name of its
// top directory>; no repository at all is global.
func (r Repo) Scope() Scope {
	if r.Root == "" {
		return Scope{Namespace: namespace.Global}
	}
	fallback := localNamespace(filepath.Base(r.Root))
	if r.Remote == "" {
		return Scope{Namespace: fallback}
	}
	rem, err := namespace.ParseRemote(r.Remote)
	if err != nil {
		var re *namespace.RemoteError
		if errors.As(err, &re) && re.Local != "" && namespace.Validate(re.Local) == nil {
			return Scope{Namespace: re.Local}
		}
		return Scope{Namespace: fallback}
	}
	if ns := localNamespace(rem.Repo); ns != namespace.Global {
		fallback = ns
	}
	return Scope{Remote: "https://" + rem.Host + "/" + rem.Path, Namespace: fallback}
}

// localNamespace turns a directory or repository name into local/<name>:
// lower case, other characters as '-', at most the namespace limit; global
// when nothing valid is left.
func localNamespace(name string) string {
	var b strings.Builder
	for _, c := range strings.ToLower(name) {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '.', c == '_', c == '-':
			b.WriteRune(c)
		default:
			b.WriteByte('-')
		}
	}
	ns := "local/" + strings.Trim(b.String(), "-")
	if len(ns) > namespace.MaxLen {
		ns = ns[:namespace.MaxLen]
	}
	if namespace.Validate(ns) != nil {
		return namespace.Global
	}
	return ns
}

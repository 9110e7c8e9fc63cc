// Package scope decides where a request writes and what it reads (docs/design.md
// R-N1..R-N6). A Resolver, built once from the start-up options, turns a git
// remote into a repository namespace (GitHub remotes become github/…, remotes
// on a forge_hosts host gitea/…), applies namespace_renames and the owner
// limits (github_owner, forge_owner) to every namespace a request names, and
// gives the scope chain reads use: the namespace itself, the projects/<name>
// scopes project_links give it, the request's topics, then global. Hub
// namespaces (hubs) reach every repository namespace on top of their chain.
//
// The package is pure: no I/O, no clock. Its errors carry no field name; the
// caller names the request field. No error repeats a remote's user
// information, and a namespace derived from a remote passes the secret screen
// before it is returned, so it can be stored and echoed.
package scope

import (
	"errors"
	"fmt"
	"strings"

	"github.com/hearth-memory/hearth/server/options"
	"github.com/hearth-memory/hearth/storage/namespace"
	"github.com/hearth-memory/hearth/storage/screen"
)

// Forge kinds: the first segment of a repository namespace from a remote.
const (
	KindGitHub = "github"
	KindGitea  = "gitea"
	KindLocal  = "local"
)

// githubHosts are the host names of GitHub remotes: the web host and the
// SSH-over-443 host.
var githubHosts = map[string]bool{"github.com": true, "www.github.com": true, "ssh.github.com": true}

// Resolver resolves namespaces under one set of options. It is immutable and
// safe for concurrent use.
type Resolver struct {
	githubOwner, forgeOwner string
	forgeHosts              map[string]bool     // host names, without port
	links                   map[string][]string // repository namespace → its projects/<name> scopes
	hubs                    map[string]bool
	renames                 []options.Rename
}

// New builds a Resolver from options that passed options.Validate. The
// namespaces in project_links and hubs are read through namespace_renames,
// so configuration written before a rename keeps working after it.
func New(o options.Options) *Resolver {
	r := &Resolver{
		githubOwner: o.GithubOwner,
		forgeOwner:  o.ForgeOwner,
		forgeHosts:  make(map[string]bool, len(o.ForgeHosts)),
		links:       make(map[string][]string),
		hubs:        make(map[string]bool, len(o.Hubs)),
		renames:     o.NamespaceRenames,
	}
	for _, h := range o.ForgeHosts {
		r.forgeHosts[hostOnly(h)] = true
	}
	for _, l := range o.ProjectLinks {
		for _, ns := range l.Namespaces {
			ns = r.Rename(ns)
			if !contains(r.links[ns], l.Namespace()) {
				r.links[ns] = append(r.links[ns], l.Namespace())
			}
		}
	}
	for _, h := range o.Hubs {
		r.hubs[r.Rename(h)] = true
	}
	return r
}

// hostOnly drops the port of a forge_hosts entry ("host:port" or
// "[v6]:port"): a forge is one host whatever port its web and SSH servers
// listen on, and the namespace does not name the host anyway.
func hostOnly(h string) string {
	if strings.HasPrefix(h, "[") {
		if end := strings.IndexByte(h, ']'); end >= 0 {
			return h[:end+1]
		}
		return h
	}
	if i := strings.LastIndexByte(h, ':'); i >= 0 {
		return h[:i]
	}
	return h
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// FromRemote returns the repository namespace of a git remote URL (any form
// namespace.ParseRemote reads): github/<owner>/<repo> for GitHub,
// gitea/<owner>/<repo> for a host in forge_hosts, with renames and owner
// limits applied as by Home.
//
// It refuses a remote that cannot be read, a path on disk, a host that is
// neither GitHub nor a forge host (the error suggests a local/<name>
// namespace instead), an owner outside github_owner or forge_owner, and a
// remote whose owner or repository looks like a secret (a *screen.Refusal
// for field "remote"). Error texts never repeat the remote's user
// information.
func (r *Resolver) FromRemote(remote string) (string, error) {
	rem, err := namespace.ParseRemote(remote)
	if err != nil {
		return "", safe(err)
	}
	// Screened, as written, before any part of it is echoed or stored.
	if _, err := screen.Check("remote", rem.Host+"/"+rem.Path); err != nil {
		return "", err
	}
	var kind string
	switch {
	case githubHosts[rem.Host]:
		kind = KindGitHub
	case r.forgeHosts[rem.Host]:
		kind = KindGitea
	default:
		return "", safe(fmt.Errorf("host %s is neither GitHub nor one of forge_hosts; add it to forge_hosts if it is a Gitea or Forgejo server, or use the namespace local/%s for this checkout", rem.Host, rem.Repo))
	}
	return r.Home(rem.Namespace(kind))
}

// safe passes err on unless its text trips the secret screen, in which case
// a fixed message replaces it: error texts are echoed to clients.
func safe(err error) error {
	if _, serr := screen.Check("remote", err.Error()); serr != nil {
		return errors.New("is not a git remote URL Hearth can read")
	}
	return err
}

// Rename applies namespace_renames to ns: a namespace under a from owner
// prefix moves under its to prefix (github/old/x → github/new/x). Other
// namespaces come back unchanged. Renames do not chain (options.Validate
// refuses chains), so at most one applies.
func (r *Resolver) Rename(ns string) string {
	for _, rn := range r.renames {
		if rest, ok := strings.CutPrefix(ns, rn.From+"/"); ok {
			return rn.To + "/" + rest
		}
	}
	return ns
}

// Home returns the namespace a request naming ns reads and writes: ns after
// renames. ns must already pass namespace.Validate. It refuses a github/ or
// gitea/ namespace whose owner is not github_owner or forge_owner when that
// option is set.
func (r *Resolver) Home(ns string) (string, error) {
	ns = r.Rename(ns)
	kind, rest, _ := strings.Cut(ns, "/")
	owner, _, _ := strings.Cut(rest, "/")
	switch {
	case kind == KindGitHub && r.githubOwner != "" && owner != r.githubOwner:
		return "", fmt.Errorf("is refused: github_owner limits Hearth to repositories of %s", r.githubOwner)
	case kind == KindGitea && r.forgeOwner != "" && owner != r.forgeOwner:
		return "", fmt.Errorf("is refused: forge_owner limits Hearth to repositories of %s", r.forgeOwner)
	}
	return ns, nil
}

// Chain returns the scopes a read in home covers, first to last, each once:
// home, the projects/<name> scopes project_links give it (in option order),
// topics/<t> for each topic, then global (docs/design.md R-N4). Equal scores rank the
// earlier scope first.
func (r *Resolver) Chain(home string, topics []string) []string {
	out := make([]string, 0, 2+len(topics)+len(r.links[home]))
	add := func(ns string) {
		if !contains(out, ns) {
			out = append(out, ns)
		}
	}
	add(home)
	for _, p := range r.links[home] {
		add(p)
	}
	for _, t := range topics {
		add("topics/" + t)
	}
	add(namespace.Global)
	return out
}

// IsHub reports whether home is one of hubs: its search and task match reach
// every repository namespace as well as its chain (docs/design.md R-N5).
func (r *Resolver) IsHub(home string) bool { return r.hubs[home] }

// IsRepository reports whether ns is a repository namespace: github/…,
// gitea/… or local/….
func IsRepository(ns string) bool {
	kind, _, ok := strings.Cut(ns, "/")
	return ok && (kind == KindGitHub || kind == KindGitea || kind == KindLocal)
}

package server

import (
	"context"
	"errors"
	"log/slog"

	"github.com/hearth-memory/hearth/server/options"
	"github.com/hearth-memory/hearth/server/retrieval"
	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/namespace"
	"github.com/hearth-memory/hearth/storage/screen"
)

// resolve turns a request's namespace (or git remote) and topics into the
// home namespace and the scope chain reads use. Every scoped RPC calls it;
// field errors name nsField, "remote" or "topics".
//
// A remote stands in for the namespace; given both, they must name the same
// repository. With neither, home is global. The home namespace has
// namespace_renames applied and meets github_owner / forge_owner; the chain
// is home, its linked projects, the topics, then global (docs/design.md R-N1..R-N4).
// Writes go to home alone. A hub's wider reach for search and task match is
// hubReach(home).
func (s *Server) resolve(nsField, ns, remote string, topics []string) (home string, scopes []string, err error) {
	if remote != "" {
		if home, err = s.scopes.FromRemote(remote); err != nil {
			var ref *screen.Refusal
			if errors.As(err, &ref) {
				return "", nil, err
			}
			return "", nil, invalid("remote", "%v", err)
		}
	}
	if ns != "" || remote == "" {
		if ns == "" {
			ns = namespace.Global
		}
		if err := checkNamespace(nsField, ns); err != nil {
			return "", nil, err
		}
		named, err := s.scopes.Home(ns)
		if err != nil {
			return "", nil, invalid(nsField, "%v", err)
		}
		if remote != "" && named != home {
			return "", nil, invalid("remote", "names a different repository than %s; give one of them", nsField)
		}
		// A named namespace is persisted and echoed like any text: it passes
		// the screen too (a remote's namespace already has).
		if _, err := screen.Check(nsField, named); err != nil {
			return "", nil, err
		}
		home = named
	}
	if err := checkTopics("topics", topics); err != nil {
		return "", nil, err
	}
	if _, err := screen.CheckAll("topics", topics); err != nil {
		return "", nil, err
	}
	return home, s.scopes.Chain(home, topics), nil
}

// retrieve resolves a search's or a context packet's namespace (or remote)
// and topics into its scope chain and runs the retrieval pipeline over it:
// the one path both take from request to ranking. A hub's chain reaches
// every repository namespace (R-N5; hubs in docs/options.md). It returns the chain too, home
// first.
func (s *Server) retrieve(ctx context.Context, q retrieval.Query, ns, remote string, topics []string) (retrieval.Result, []string, error) {
	home, chain, err := s.resolve("namespace", ns, remote, topics)
	if err != nil {
		return retrieval.Result{}, nil, err
	}
	q.Chain, q.AllRepositories = chain, s.scopes.IsHub(home)
	res, err := s.pipeline.Run(ctx, q)
	return res, chain, err
}

// ApplyRenames applies the namespace_renames option at start, all renames
// in one transaction, and logs what each moved (docs/design.md R-N6). It is safe at
// every start: once a rename ran nothing is left under its from prefix, so
// it moves nothing more and audits nothing more (and requests naming the
// old prefix resolve to the new one, so none lands there again).
func ApplyRenames(ctx context.Context, db *storage.DB, renames []options.Rename, log *slog.Logger) error {
	if len(renames) == 0 {
		return nil
	}
	rs := make([]storage.Rename, len(renames))
	for i, r := range renames {
		rs[i] = storage.Rename{From: r.From, To: r.To}
	}
	done, err := db.RenameNamespaces(ctx, rs)
	if err != nil {
		return err
	}
	for _, d := range done {
		if len(d.Rows) > 0 {
			log.InfoContext(ctx, "renamed namespaces", "from", d.From, "to", d.To, "records", d.Records())
		}
	}
	return nil
}

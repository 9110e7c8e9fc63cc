package server

import (
	"context"

	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
)

// checkNamespaceRequest asks for a remote or a name; resolve checks each.
func checkNamespaceRequest(r *hearthv1.NamespaceRequest) error {
	if r.GetRemote() == "" && r.GetName() == "" {
		return invalid("remote", "is required: give remote (a git remote URL such as git@github.com:acme/api.git) or name (a namespace such as projects/platform)")
	}
	return nil
}

// Namespace resolves a git remote, or checks a namespace name, and returns
// the namespace with the scope chain reads use (docs/design.md R-N2, R-N4).
func (m *memoryService) Namespace(ctx context.Context, r *hearthv1.NamespaceRequest) (*hearthv1.NamespaceResponse, error) {
	if err := checkNamespaceRequest(r); err != nil {
		return nil, toStatus(ctx, m.log, err)
	}
	home, scopes, err := m.resolve("name", r.GetName(), r.GetRemote(), nil)
	if err != nil {
		return nil, toStatus(ctx, m.log, err)
	}
	return &hearthv1.NamespaceResponse{Namespace: home, Scopes: scopes}, nil
}

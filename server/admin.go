package server

import (
	"context"

	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
	"github.com/hearth-memory/hearth/server/auth"
	"github.com/hearth-memory/hearth/storage"
)

type adminService struct {
	hearthv1.UnimplementedAdminServiceServer
	*Server
}

var _ hearthv1.AdminServiceServer = (*adminService)(nil)

// Whoami reports the caller the interceptor identified.
func (a *adminService) Whoami(ctx context.Context, _ *hearthv1.WhoamiRequest) (*hearthv1.WhoamiResponse, error) {
	c, _ := auth.FromContext(ctx)
	resp := &hearthv1.WhoamiResponse{Client: c.Name, ByToken: c.ByToken, Version: a.version}
	for _, s := range c.Scopes {
		resp.Scopes = append(resp.Scopes, string(s))
	}
	return resp, nil
}

func (a *adminService) Status(ctx context.Context, _ *hearthv1.StatusRequest) (*hearthv1.StatusResponse, error) {
	st, err := a.db.Status(ctx)
	resp := &hearthv1.StatusResponse{Version: a.version, Store: storeHealth(a.db.Health())}
	if err != nil && a.db.Damage() == nil {
		return nil, toStatus(ctx, a.log, err)
	} else if err != nil {
		// Counting a damaged table fails; the damage is what to report.
		st = &storage.Status{}
		resp.Store.Problems = append(resp.Store.Problems, "the record counts could not be read from the damaged file")
	}
	for _, c := range st.Counts {
		resp.Counts = append(resp.Counts, &hearthv1.TypeStatusCount{Type: c.Type, Status: c.Status, Count: uint32(c.N)})
		if c.Status != storage.StatusDeleted {
			resp.Records += uint32(c.N)
		}
	}
	for _, n := range st.Namespaces {
		resp.Namespaces = append(resp.Namespaces, &hearthv1.NamespaceCount{Namespace: n.Namespace, Records: uint32(n.Records)})
	}
	if err := a.modelStatus(ctx, resp); err != nil {
		return nil, toStatus(ctx, a.log, err)
	}
	if err := a.anchorStatus(ctx, resp); err != nil {
		return nil, toStatus(ctx, a.log, err)
	}
	enc, err := a.encoderStatus(ctx)
	if err != nil {
		return nil, toStatus(ctx, a.log, err)
	}
	resp.Encoder = enc
	if at, ok, err := a.db.LastBackup(ctx); err != nil {
		return nil, toStatus(ctx, a.log, err)
	} else if ok {
		resp.LastBackupAt = ts(at)
	}
	withholdURLs(ctx, resp)
	return resp, nil
}

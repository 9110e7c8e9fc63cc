package server

import (
	"context"
	"time"

	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
	"github.com/hearth-memory/hearth/server/budget"
)

func checkUnusedRequest(r *hearthv1.UnusedRequest) error {
	if int(r.GetLimit()) > maxUnusedLimit {
		return invalid("limit", "must be at most %d", maxUnusedLimit)
	}
	return nil
}

// Unused lists records nothing used in 30 days, oldest first, once usage
// counting has run that long (R-K6). The namespace filters (empty: every
// namespace); it is not a scope chain, since a record's own namespace is
// what a clean-up acts on. The list is packed into the records budget
// (2,000 tokens, R-B3) like every other list of records.
func (a *adminService) Unused(ctx context.Context, r *hearthv1.UnusedRequest) (*hearthv1.UnusedResponse, error) {
	if err := checkUnusedRequest(r); err != nil {
		return nil, toStatus(ctx, a.log, err)
	}
	limit := int(r.GetLimit())
	if limit == 0 {
		limit = defaultUnusedLimit
	}
	ns := ""
	if r.GetNamespace() != "" {
		home, _, err := a.resolve("namespace", r.GetNamespace(), "", nil)
		if err != nil {
			return nil, toStatus(ctx, a.log, err)
		}
		ns = home
	}
	// A zero time asks storage for its own clock, which tests inject.
	recs, since, ready, err := a.db.Unused(ctx, ns, time.Time{}, limit)
	if err != nil {
		return nil, toStatus(ctx, a.log, err)
	}
	out := make([]*hearthv1.UnusedRecord, len(recs))
	for i, u := range recs {
		out[i] = &hearthv1.UnusedRecord{
			Id: u.ID, Namespace: u.Namespace, Type: u.Type, Title: u.Title, CreatedAt: ts(u.CreatedAt),
			LastReturnedAt: ts(u.LastReturnedAt), LastFetchedAt: ts(u.LastFetchedAt),
		}
	}
	resp := &hearthv1.UnusedResponse{CountingSince: ts(since), Ready: ready}
	if _, err := budget.Fit(a.size, resp, resp.SetRecords, out, budget.Records, true); err != nil {
		return nil, toStatus(ctx, a.log, err)
	}
	return resp, nil
}

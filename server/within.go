package server

import (
	"context"

	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
	"github.com/hearth-memory/hearth/server/retrieval"
	"github.com/hearth-memory/hearth/storage"
)

// What memory_timeline's and memory_search's within reaches.
const (
	withinChain     = "chain"
	withinNamespace = "namespace"
	withinAll       = "all"
)

// checkWithin validates within against the fields that name where to look:
// with all, none may be given; with namespace, topics may not.
func checkWithin(within, ns, remote string, topics []string) error {
	switch within {
	case "", withinChain:
	case withinNamespace:
		if len(topics) > 0 {
			return invalid("topics", "must be empty when within is namespace")
		}
	case withinAll:
		switch {
		case ns != "":
			return invalid("namespace", "must be empty when within is all")
		case remote != "":
			return invalid("remote", "must be empty when within is all")
		case len(topics) > 0:
			return invalid("topics", "must be empty when within is all")
		}
	default:
		return invalid("within", "must be chain, namespace or all")
	}
	return nil
}

// checkTimelineFilters validates the timeline's filters: types, statuses,
// within and after_id.
func checkTimelineFilters(r *hearthv1.TimelineRequest) error {
	if len(r.GetTypes()) > maxTimelineTypes {
		return invalid("types", "has more than %d entries", maxTimelineTypes)
	}
	for i, t := range r.GetTypes() {
		if err := storage.CheckType(fieldIndex("types", i), t); err != nil {
			return err
		}
	}
	if len(r.GetStatuses()) > maxTimelineStatus {
		return invalid("statuses", "has more than %d entries", maxTimelineStatus)
	}
	for i, s := range r.GetStatuses() {
		if err := storage.CheckStatus(fieldIndex("statuses", i), s); err != nil {
			return err
		}
	}
	if err := checkWithin(r.GetWithin(), r.GetNamespace(), r.GetRemote(), nil); err != nil {
		return err
	}
	if r.GetAfterId() != "" {
		return checkID("after_id", r.GetAfterId())
	}
	return nil
}

// timelineScopes returns the namespaces a timeline lists: the scope chain
// of its namespace (or remote), that namespace alone, or nil for all.
func (s *Server) timelineScopes(r *hearthv1.TimelineRequest) ([]string, error) {
	if r.GetWithin() == withinAll {
		return nil, nil
	}
	home, chain, err := s.resolve("namespace", r.GetNamespace(), r.GetRemote(), nil)
	if err != nil {
		return nil, err
	}
	if r.GetWithin() == withinNamespace {
		return []string{home}, nil
	}
	return chain, nil
}

// retrieveWithin runs a search over what within reaches: the scope chain
// (retrieve), the home namespace alone, or every namespace (an empty
// chain). A validated request is assumed (checkWithin). It returns the
// namespaces read, home first (none for all).
func (s *Server) retrieveWithin(ctx context.Context, q retrieval.Query, within, ns, remote string, topics []string) (retrieval.Result, []string, error) {
	switch within {
	case withinAll:
		res, err := s.pipeline.Run(ctx, q)
		return res, nil, err
	case withinNamespace:
		home, _, err := s.resolve("namespace", ns, remote, nil)
		if err != nil {
			return retrieval.Result{}, nil, err
		}
		q.Chain = []string{home}
		res, err := s.pipeline.Run(ctx, q)
		return res, q.Chain, err
	}
	return s.retrieve(ctx, q, ns, remote, topics)
}

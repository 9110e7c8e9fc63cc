package server

import (
	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
	"github.com/hearth-memory/hearth/storage"
)

// What memory_timeline's within lists.
const (
	withinChain     = "chain"
	withinNamespace = "namespace"
	withinAll       = "all"
)

// checkTimelineFilters validates the timeline's filters: types, statuses,
// within and after_id.
func checkTimelineFilters(r *hearthv1.TimelineRequest) error {
	if len(r.GetTypes()) > maxTimelineTypes {
		return invalid("types", "has more than %d entries", maxTimelineTypes)
	}
	for i, t := range r.GetTypes() {
		if err := checkType(fieldIndex("types", i), t); err != nil {
			return err
		}
	}
	if len(r.GetStatuses()) > maxTimelineStatus {
		return invalid("statuses", "has more than %d entries", maxTimelineStatus)
	}
	for i, s := range r.GetStatuses() {
		if !storage.ValidStatus(s) {
			return invalid(fieldIndex("statuses", i), "must be active, candidate, superseded or deleted")
		}
	}
	switch r.GetWithin() {
	case "", withinChain, withinNamespace:
	case withinAll:
		if r.GetNamespace() != "" {
			return invalid("namespace", "must be empty when within is all")
		}
		if r.GetRemote() != "" {
			return invalid("remote", "must be empty when within is all")
		}
	default:
		return invalid("within", "must be chain, namespace or all")
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

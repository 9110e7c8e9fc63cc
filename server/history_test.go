package server

import (
	"slices"
	"strings"
	"testing"

	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
	"github.com/hearth-memory/hearth/storage"
	"google.golang.org/protobuf/encoding/protojson"
)

// FuzzCheckHistoryRequest feeds arbitrary JSON to the history, search and
// timeline validators: neither may panic, and what they accept holds their limits.
func FuzzCheckHistoryRequest(f *testing.F) {
	for _, s := range []string{
		`{}`,
		`{"id":"01JD3M5ZK9Q8W7E6R5T4Y3X2V1","limit":100}`,
		`{"id":"01jd3m5zk9q8w7e6r5t4y3x2v1","limit":4294967295}`,
		`{"types":["note","decision"],"statuses":["deleted"],"within":"all"}`,
		`{"within":"namespace","namespace":"github/acme/api","after_id":"01JD3M5ZK9Q8W7E6R5T4Y3X2V1"}`,
		`{"within":"all","remote":"git@github.com:acme/api.git"}`,
		`{"query":"retries","within":"namespace","topics":["go"]}`,
		`{"statuses":["active","active","active","active","active"],"within":"ALL"}`,
	} {
		f.Add(s)
	}
	opts := protojson.UnmarshalOptions{DiscardUnknown: true}
	f.Fuzz(func(t *testing.T, s string) {
		var hr hearthv1.HistoryRequest
		if opts.Unmarshal([]byte(s), &hr) == nil && checkHistoryRequest(&hr) == nil {
			if !idPattern.MatchString(hr.GetId()) || int(hr.GetLimit()) > maxHistoryLimit {
				t.Fatalf("accepted a bad history request: %s", s)
			}
		}
		var sr hearthv1.SearchRequest
		if opts.Unmarshal([]byte(s), &sr) == nil && checkSearchRequest(&sr) == nil {
			if w := sr.GetWithin(); !slices.Contains([]string{"", withinChain, withinNamespace, withinAll}, w) ||
				(w == withinAll && (sr.GetNamespace() != "" || sr.GetRemote() != "" || len(sr.GetTopics()) > 0)) ||
				(w == withinNamespace && len(sr.GetTopics()) > 0) {
				t.Fatalf("accepted a bad search request: %s", s)
			}
		}
		var tr hearthv1.TimelineRequest
		if opts.Unmarshal([]byte(s), &tr) == nil && checkTimelineRequest(&tr) == nil {
			bad := len(tr.GetTypes()) > maxTimelineTypes || len(tr.GetStatuses()) > maxTimelineStatus ||
				!slices.Contains([]string{"", withinChain, withinNamespace, withinAll}, tr.GetWithin()) ||
				(tr.GetWithin() == withinAll && (tr.GetNamespace() != "" || tr.GetRemote() != "")) ||
				(tr.GetAfterId() != "" && !idPattern.MatchString(tr.GetAfterId()))
			for _, ty := range tr.GetTypes() {
				bad = bad || !storage.ValidType(ty)
			}
			for _, st := range tr.GetStatuses() {
				bad = bad || !storage.ValidStatus(st)
			}
			if bad {
				t.Fatalf("accepted a bad timeline request: %s", s)
			}
		}
	})
}

// fieldOf is the field a validation error names: a request check's own
// (fieldError) or a record rule storage owns (an Invalid *storage.Error),
// both sent as INVALID_ARGUMENT naming the field; "" for nil.
func fieldOf(t *testing.T, err error) string {
	t.Helper()
	if err == nil {
		return ""
	}
	if fe, ok := err.(*fieldError); ok {
		return fe.field
	}
	if se, ok := err.(*storage.Error); ok && se.Code == storage.Invalid && se.Field != "" {
		return se.Field
	}
	t.Fatalf("got %v, want a field error", err)
	return ""
}

func TestCheckHistoryRequest(t *testing.T) {
	id := "01JD3M5ZK9Q8W7E6R5T4Y3X2V1"
	for _, tt := range []struct {
		name  string
		req   *hearthv1.HistoryRequest
		field string // "" when valid
	}{
		{"OK", &hearthv1.HistoryRequest{Id: id}, ""},
		{"OKMaxLimit", &hearthv1.HistoryRequest{Id: id, Limit: uint32(maxHistoryLimit)}, ""},
		{"ErrNoID", &hearthv1.HistoryRequest{}, "id"},
		{"ErrBadID", &hearthv1.HistoryRequest{Id: strings.ToLower(id)}, "id"},
		{"ErrLimit", &hearthv1.HistoryRequest{Id: id, Limit: uint32(maxHistoryLimit) + 1}, "limit"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := fieldOf(t, checkHistoryRequest(tt.req)); got != tt.field {
				t.Errorf("field: got %q, want %q", got, tt.field)
			}
		})
	}
}

func TestCheckTimelineFilters(t *testing.T) {
	every := []string{"active", "candidate", "superseded", "deleted"}
	for _, tt := range []struct {
		name  string
		req   *hearthv1.TimelineRequest
		field string // "" when valid
	}{
		{"OKNone", &hearthv1.TimelineRequest{}, ""},
		{"OKEveryType", &hearthv1.TimelineRequest{Types: storage.Types}, ""},
		{"OKEveryStatus", &hearthv1.TimelineRequest{Statuses: every}, ""},
		{"OKWithinNamespace", &hearthv1.TimelineRequest{Within: "namespace", Namespace: "github/acme/api"}, ""},
		{"OKWithinAll", &hearthv1.TimelineRequest{Within: "all"}, ""},
		{"OKAfter", &hearthv1.TimelineRequest{AfterId: "01JD3M5ZK9Q8W7E6R5T4Y3X2V1"}, ""},
		{"ErrType", &hearthv1.TimelineRequest{Types: []string{"note", "memo"}}, "types[1]"},
		{"ErrTooManyTypes", &hearthv1.TimelineRequest{Types: append(slices.Clone(storage.Types), "note")}, "types"},
		{"ErrStatus", &hearthv1.TimelineRequest{Statuses: []string{"Active"}}, "statuses[0]"},
		{"ErrTooManyStatuses", &hearthv1.TimelineRequest{Statuses: append(slices.Clone(every), "active")}, "statuses"},
		{"ErrWithin", &hearthv1.TimelineRequest{Within: "everything"}, "within"},
		{"ErrAllWithNamespace", &hearthv1.TimelineRequest{Within: "all", Namespace: "global"}, "namespace"},
		{"ErrAllWithRemote", &hearthv1.TimelineRequest{Within: "all", Remote: "git@github.com:acme/api.git"}, "remote"},
		{"ErrAfter", &hearthv1.TimelineRequest{AfterId: "01JD3M5Z"}, "after_id"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := fieldOf(t, checkTimelineRequest(tt.req)); got != tt.field {
				t.Errorf("field: got %q, want %q", got, tt.field)
			}
		})
	}
}

func TestCheckSearchRequest_Within(t *testing.T) {
	for _, tt := range []struct {
		name  string
		req   *hearthv1.SearchRequest
		field string // "" when valid
	}{
		{"OKChain", &hearthv1.SearchRequest{Query: "q", Within: "chain", Namespace: "global", Topics: []string{"go"}}, ""},
		{"OKNamespace", &hearthv1.SearchRequest{Query: "q", Within: "namespace", Namespace: "github/acme/api"}, ""},
		{"OKAll", &hearthv1.SearchRequest{Query: "q", Within: "all"}, ""},
		{"ErrWithin", &hearthv1.SearchRequest{Query: "q", Within: "All"}, "within"},
		{"ErrAllNamespace", &hearthv1.SearchRequest{Query: "q", Within: "all", Namespace: "global"}, "namespace"},
		{"ErrAllRemote", &hearthv1.SearchRequest{Query: "q", Within: "all", Remote: "git@github.com:acme/api.git"}, "remote"},
		{"ErrAllTopics", &hearthv1.SearchRequest{Query: "q", Within: "all", Topics: []string{"go"}}, "topics"},
		{"ErrNamespaceTopics", &hearthv1.SearchRequest{Query: "q", Within: "namespace", Topics: []string{"go"}}, "topics"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := fieldOf(t, checkSearchRequest(tt.req)); got != tt.field {
				t.Errorf("field: got %q, want %q", got, tt.field)
			}
		})
	}
}

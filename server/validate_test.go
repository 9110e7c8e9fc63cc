package server

import (
	"strings"
	"testing"

	"github.com/hearth-memory/hearth/gateway"
	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
	"github.com/hearth-memory/hearth/server/budget"
	"google.golang.org/protobuf/encoding/protojson"
)

// FuzzCheckRequests feeds arbitrary JSON to every request validator: none
// may panic, and an accepted request must hold the limits they promise.
func FuzzCheckRequests(f *testing.F) {
	for _, s := range []string{
		`{}`,
		`{"namespace":"github/acme/api","type":"decision","title":"t","content":"c","topics":["a"],"anchors":["path:a/b.go","url:https://x.y/z?q=1"],"confidence":0.5}`,
		`{"id":"01JD3M5ZK9Q8W7E6R5T4Y3X2V1","revision":3,"changes":{"topics":["a",1],"anchors":[],"status":"active"}}`,
		`{"ids":["01JD3M5ZK9Q8W7E6R5T4Y3X2V1",""]}`,
		`{"query":"how do we retry?","limit":50,"exclude":["01JD3M5Z"],"min_cosine":0.3}`,
		`{"since":"2026-01-01T00:00:00Z","until":"2025-01-01T00:00:00Z"}`,
		`{"anchors":["entity:light.kitchen","host:nas","path:../etc"]}`,
		`{"id":"01JD3M5ZK9Q8W7E6R5T4Y3X2V1","anchor":"path:a.go","state":"unavailable","detail":"gone","reports":[{"id":"01JD3M5ZK9Q8W7E6R5T4Y3X2V1","anchor":"host:nas","state":"available"}]}`,
	} {
		f.Add(s)
	}
	opts := protojson.UnmarshalOptions{DiscardUnknown: true}
	sz := testSizer(f)
	f.Fuzz(func(t *testing.T, s string) {
		var store hearthv1.StoreRequest
		if opts.Unmarshal([]byte(s), &store) == nil && checkStoreRequest(sz, &store) == nil {
			if len(store.GetContent()) > maxContentBytes || len(store.GetAnchors()) > maxAnchors {
				t.Fatalf("accepted an oversized store: %s", s)
			}
		}
		var get hearthv1.GetRequest
		if opts.Unmarshal([]byte(s), &get) == nil && checkGetRequest(&get) == nil && len(get.GetIds()) > maxIDs {
			t.Fatalf("accepted too many ids: %s", s)
		}
		var up hearthv1.UpdateRequest
		if opts.Unmarshal([]byte(s), &up) == nil {
			_, _ = checkUpdateRequest(&up)
		}
		var fo hearthv1.ForgetRequest
		if opts.Unmarshal([]byte(s), &fo) == nil {
			_ = checkForgetRequest(&fo)
		}
		var se hearthv1.SearchRequest
		if opts.Unmarshal([]byte(s), &se) == nil && checkSearchRequest(&se) == nil && int(se.GetLimit()) > maxSearchLimit {
			t.Fatalf("accepted limit %d", se.GetLimit())
		}
		var tl hearthv1.TimelineRequest
		if opts.Unmarshal([]byte(s), &tl) == nil {
			_ = checkTimelineRequest(&tl)
		}
		var rep hearthv1.ReportAnchorRequest
		if opts.Unmarshal([]byte(s), &rep) == nil {
			if rs, err := checkReportAnchorRequest(&rep); err == nil {
				if len(rep.GetReports()) > maxReports || len(rs) == 0 {
					t.Fatalf("accepted %d reports: %s", len(rep.GetReports()), s)
				}
				for _, x := range rs {
					if x.state != "available" && x.state != "unavailable" || len([]rune(x.detail)) > x.maxDetail {
						t.Fatalf("accepted a bad report %+v: %s", x, s)
					}
				}
			}
		}
		for _, a := range []string{s, "url:" + s, "path:" + s, "entity:" + s, "host:" + s} {
			_ = checkAnchor("anchors[0]", a)
		}
	})
}

func TestCheckAnchor(t *testing.T) {
	ok := []string{"path:internal/x.go", "entity:light.kitchen", "host:nas.local", "url:https://example.com/a?b=c"}
	for _, a := range ok {
		if err := checkAnchor("anchors[0]", a); err != nil {
			t.Errorf("checkAnchor(%q) = %v, want nil", a, err)
		}
	}
	bad := []string{"", "path:", "path:/etc/passwd", "path:../x", "path:a\\b", "entity:Light", "host:a b", "url:/relative", "ftp", "file:x", "path:a b"}
	for _, a := range bad {
		if err := checkAnchor("anchors[0]", a); err == nil {
			t.Errorf("checkAnchor(%q) = nil, want an error", a)
		}
	}
}

// testSizer measures as the transports marshal.
func testSizer(tb testing.TB) *budget.Sizer {
	tb.Helper()
	sz, err := budget.NewSizer(gateway.MarshalResult)
	if err != nil {
		tb.Fatal(err)
	}
	return sz
}

// TestCheckRecordSize: a record whose JSON fits the records budget passes,
// with or without being marshalled; one whose JSON would not is refused
// with its size, also when only escaping makes it too large.
func TestCheckRecordSize(t *testing.T) {
	sz := testSizer(t)
	for _, tt := range []struct {
		name    string
		content string
		ok      bool
	}{
		{"OK", strings.Repeat("retry with backoff ", 40), true},
		{"Long", strings.Repeat("a", maxContentBytes), true},
		{"ErrEscaped", strings.Repeat(`"`, 4000), false},
		{"ErrControl", strings.Repeat("\x01", 2000), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := checkRecordSize(sz, "content", &hearthv1.Record{Namespace: "github/acme/api", Type: "decision",
				Title: "Retry policy", Content: tt.content, Topics: []string{"billing"}})
			if (err == nil) != tt.ok {
				t.Fatalf("checkRecordSize = %v, want ok %v", err, tt.ok)
			}
			if err != nil && !strings.Contains(err.Error(), "bytes as JSON") {
				t.Errorf("refusal %q does not give the size", err)
			}
		})
	}
}

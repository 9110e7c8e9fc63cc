package mcpbridge

import (
	"encoding/json"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/hearth-memory/hearth/gateway"
)

// FuzzDecodeArguments feeds arbitrary JSON arguments to every tool's
// decoder: it must never panic, and must either decode a request that
// marshals back or refuse with INVALID_ARGUMENT and a 400 error body.
// The committed corpus is in testdata/fuzz/FuzzDecodeArguments.
func FuzzDecodeArguments(f *testing.F) {
	routes, err := gateway.Routes()
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{
		``, `null`, `{}`, `[]`, `"x"`, `0`,
		`{"namespace":"github/acme/api","type":"decision","title":"t","content":"c","confidence":0.9,"topics":["db"],"anchors":["path:go.mod"]}`,
		`{"ids":["01J00000000000000000000000"]}`,
		`{"id":"r","revision":2,"changes":{"title":"t","topics":[],"anchors":["path:x"],"confidence":1}}`,
		`{"query":"wal","limit":50,"min_cosine":0.5,"exclude":["01J00000"],"recall":true}`,
		`{"namespace":"global","since":"2025-01-02T15:04:05Z","until":"2025-01-03T00:00:00+02:00"}`,
		`{"limit":-1}`, `{"limit":1e99}`, `{"unknown":{"deep":[1,2,{"x":null}]}}`,
		`{"changes":{"topics":[1,{"a":[]}]}}`, `{"query":"a","query":"b"}`, `{"changes":null}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, r := range routes {
			msg, err := decodeArguments(r, json.RawMessage(data))
			if err != nil {
				if st, ok := status.FromError(err); !ok || st.Code() != codes.InvalidArgument {
					t.Fatalf("%s: %q: error %v, want INVALID_ARGUMENT", r.Tool.GetName(), data, err)
				}
				if code, _ := gateway.ErrorJSON(err); code != 400 {
					t.Fatalf("%s: %q: error status %d, want 400", r.Tool.GetName(), data, code)
				}
				continue
			}
			if _, err := gateway.MarshalResult(msg); err != nil {
				t.Fatalf("%s: %q: decoded request does not marshal: %v", r.Tool.GetName(), data, err)
			}
		}
	})
}

package gateway_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/hearth-memory/hearth/gateway"
	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
)

func TestMarshalResult(t *testing.T) {
	t.Parallel()
	zero := 0.0
	resp := &hearthv1.SearchResponse{
		Hits: []*hearthv1.SearchHit{
			{Id: "a", Score: 1.5},                // cosine unset: absent
			{Id: "b", Score: 0.5, Cosine: &zero}, // cosine set to 0: present
		},
		Ranking: "fts",
	}
	body, err := gateway.MarshalResult(resp)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Hits            []map[string]any `json:"hits"`
		EstimatedTokens any              `json:"estimated_tokens"`
		Truncated       any              `json:"truncated"`
		LeftOut         any              `json:"left_out"`
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	if _, ok := got.Hits[0]["cosine"]; ok {
		t.Errorf("unset optional cosine present: %s", body)
	}
	if v, ok := got.Hits[1]["cosine"]; !ok || v != 0.0 {
		t.Errorf("cosine set to 0 = %v (present %v), want 0: %s", v, ok, body)
	}
	// Zero scalars are emitted, with proto names, numbers as numbers.
	if got.EstimatedTokens != 0.0 || got.Truncated != false || got.LeftOut != 0.0 {
		t.Errorf("defaults not emitted as numbers/booleans: %s", body)
	}
	if _, ok := got.Hits[0]["why"]; !ok {
		t.Errorf("empty string field why absent: %s", body)
	}

	t.Run("Record", func(t *testing.T) {
		at := time.Date(2025, 1, 2, 15, 4, 5, 0, time.UTC)
		body, err := gateway.MarshalResult(&hearthv1.StoreResponse{Record: &hearthv1.Record{Id: "r", Revision: 1, CreatedAt: timestamppb.New(at)}})
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			Record map[string]any `json:"record"`
		}
		if err := json.Unmarshal(body, &got); err != nil {
			t.Fatal(err)
		}
		if got.Record["created_at"] != "2025-01-02T15:04:05Z" {
			t.Errorf("created_at = %v", got.Record["created_at"])
		}
		if got.Record["revision"] != 1.0 {
			t.Errorf("revision = %#v, want the number 1", got.Record["revision"])
		}
		if _, ok := got.Record["updated_at"]; ok {
			t.Errorf("unset updated_at present: %s", body)
		}
		if _, ok := got.Record["topics"]; !ok {
			t.Errorf("empty topics absent: %s", body)
		}
	})
}

func TestDecodeRequest(t *testing.T) {
	t.Parallel()
	t.Run("OK", func(t *testing.T) {
		tests := []struct {
			name string
			data string
			into proto.Message
			want proto.Message
		}{
			{"Empty", "", &hearthv1.StoreRequest{}, &hearthv1.StoreRequest{}},
			{"Spaces", " \n\t", &hearthv1.StoreRequest{}, &hearthv1.StoreRequest{}},
			{"Null", "null", &hearthv1.StoreRequest{}, &hearthv1.StoreRequest{}},
			{"EmptyObject", "{}", &hearthv1.StatusRequest{}, &hearthv1.StatusRequest{}},
			{"ProtoNames", `{"query":"x","min_cosine":0.5,"limit":3}`, &hearthv1.SearchRequest{}, &hearthv1.SearchRequest{Query: "x", MinCosine: proto.Float64(0.5), Limit: 3}},
			{"JSONNamesToo", `{"minCosine":0.5}`, &hearthv1.SearchRequest{}, &hearthv1.SearchRequest{MinCosine: proto.Float64(0.5)}},
			{"NestedAndWellKnown", `{"id":"r","revision":2,"changes":{"title":"t","topics":["a"]}}`, &hearthv1.UpdateRequest{},
				&hearthv1.UpdateRequest{Id: "r", Revision: 2, Changes: &hearthv1.RecordChanges{Title: proto.String("t"), Topics: mustList(t, "a")}}},
			{"Timestamp", `{"since":"2025-01-02T15:04:05Z"}`, &hearthv1.TimelineRequest{}, &hearthv1.TimelineRequest{Since: timestamppb.New(time.Date(2025, 1, 2, 15, 4, 5, 0, time.UTC))}},
			{"ResetsFirst", `{"ids":["b"]}`, &hearthv1.GetRequest{Ids: []string{"a"}}, &hearthv1.GetRequest{Ids: []string{"b"}}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				if err := gateway.DecodeRequest([]byte(tt.data), tt.into); err != nil {
					t.Fatalf("DecodeRequest(%q) = %v", tt.data, err)
				}
				if !proto.Equal(tt.into, tt.want) {
					t.Errorf("got %v, want %v", tt.into, tt.want)
				}
			})
		}
	})

	const secret = "AKIAIOSFODNN7EXAMPLE"
	tests := []struct {
		name      string
		data      string
		into      proto.Message
		wantField string
		wantMsg   string
	}{
		{"ErrUnknownField", `{"namespace":"n","nmespace":"x"}`, &hearthv1.StoreRequest{}, "nmespace", `unknown field "nmespace"`},
		{"ErrUnknownNestedField", `{"id":"r","changes":{"title":"t","tilte":"x"}}`, &hearthv1.UpdateRequest{}, "changes.tilte", `unknown field "changes.tilte"`},
		{"ErrWrongType", `{"query":"x","limit":"` + secret + `"}`, &hearthv1.SearchRequest{}, "limit", `invalid value for field "limit": want a non-negative 32-bit integer`},
		{"ErrNegativeUnsigned", `{"limit":-1}`, &hearthv1.SearchRequest{}, "limit", `invalid value for field "limit": want a non-negative 32-bit integer`},
		{"ErrJSONNameReportedAsProtoName", `{"minCosine":"` + secret + `"}`, &hearthv1.SearchRequest{}, "min_cosine", `invalid value for field "min_cosine": want a number`},
		{"ErrStringList", `{"ids":["a",7]}`, &hearthv1.GetRequest{}, "ids", `invalid value for field "ids": want a JSON array, each item a string`},
		{"ErrNestedType", `{"changes":{"confidence":"` + secret + `"}}`, &hearthv1.UpdateRequest{}, "changes.confidence", `invalid value for field "changes.confidence": want a number`},
		{"ErrListValue", `{"changes":{"topics":"a"}}`, &hearthv1.UpdateRequest{}, "changes.topics", `invalid value for field "changes.topics": want a JSON array`},
		{"ErrMessageNotObject", `{"changes":"` + secret + `"}`, &hearthv1.UpdateRequest{}, "changes", `invalid value for field "changes": want a JSON object`},
		{"ErrTimestamp", `{"since":"yesterday ` + secret + `"}`, &hearthv1.TimelineRequest{}, "since", `invalid value for field "since": want an RFC 3339 time such as 2025-01-02T15:04:05Z`},
		{"ErrDuplicate", `{"query":"a","query":"b"}`, &hearthv1.SearchRequest{}, "query", `duplicate field "query"`},
		{"ErrDuplicateAlias", `{"min_cosine":1,"minCosine":1}`, &hearthv1.SearchRequest{}, "min_cosine", `duplicate field "min_cosine"`},
		{"ErrNotJSON", `{"query": "` + secret, &hearthv1.SearchRequest{}, "", "request is not valid JSON"},
		{"ErrTrailingData", `{"query":"a"} {}`, &hearthv1.SearchRequest{}, "", "request is not valid JSON"},
		{"ErrNotObject", `["` + secret + `"]`, &hearthv1.SearchRequest{}, "", "request must be a JSON object"},
		{"ErrString", `"` + secret + `"`, &hearthv1.SearchRequest{}, "", "request must be a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := gateway.DecodeRequest([]byte(tt.data), tt.into)
			st, ok := status.FromError(err)
			if !ok || st.Code() != codes.InvalidArgument {
				t.Fatalf("DecodeRequest(%s) = %v, want INVALID_ARGUMENT", tt.data, err)
			}
			if st.Message() != tt.wantMsg {
				t.Errorf("message = %q, want %q", st.Message(), tt.wantMsg)
			}
			_, body := gateway.ErrorJSON(err)
			e := errorBody(t, body)
			if e.GetField() != tt.wantField {
				t.Errorf("field = %q, want %q", e.GetField(), tt.wantField)
			}
			if strings.Contains(string(body), secret) {
				t.Errorf("error body repeats the caller's value: %s", body)
			}
			if !proto.Equal(tt.into, tt.into.ProtoReflect().Type().New().Interface()) {
				t.Errorf("message not left empty after a failure: %v", tt.into)
			}
		})
	}
}

func mustList(t *testing.T, values ...any) *structpb.ListValue {
	t.Helper()
	l, err := structpb.NewList(values)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

package server

import (
	"errors"
	"testing"

	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
)

func TestCheckAuditRequest(t *testing.T) {
	for _, tc := range []struct {
		limit uint32
		ok    bool
	}{
		{0, true}, {1, true}, {100, true}, {500, true}, {501, false}, {1 << 31, false},
	} {
		err := checkAuditRequest(&hearthv1.AuditRequest{Limit: tc.limit})
		if (err == nil) != tc.ok {
			t.Errorf("limit %d: got %v, want ok=%v", tc.limit, err, tc.ok)
		}
		var fe *fieldError
		if err != nil && (!errors.As(err, &fe) || fe.field != "limit") {
			t.Errorf("limit %d: got %v, want an error naming limit", tc.limit, err)
		}
	}
}

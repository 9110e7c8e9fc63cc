package server

import (
	"slices"
	"testing"

	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
	"github.com/hearth-memory/hearth/storage"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// TestSchema_EnumsAreStorages holds every enum the proto's schema declares
// for a rule storage owns (docs/design.md R-R8) to storage's own list, in
// its order: the OpenAPI document and the MCP input schemas offer exactly
// the values the one check accepts.
func TestSchema_EnumsAreStorages(t *testing.T) {
	t.Parallel()
	live := []string{storage.StatusActive, storage.StatusCandidate}
	for _, c := range []struct {
		msg   proto.Message
		field protoreflect.Name
		want  []string
	}{
		{&hearthv1.StoreRequest{}, "type", storage.Types},
		{&hearthv1.RecordChanges{}, "type", storage.Types},
		{&hearthv1.SearchRequest{}, "types", storage.Types},
		{&hearthv1.TimelineRequest{}, "types", storage.Types},
		{&hearthv1.RecordChanges{}, "status", live},
		{&hearthv1.TimelineRequest{}, "statuses", storage.Statuses},
		{&hearthv1.EvidenceRequest{}, "stance", []string{storage.StanceCorroborates, storage.StanceContradicts}},
		{&hearthv1.ReportAnchorRequest{}, "state", []string{storage.AnchorAvailable, storage.AnchorUnavailable}},
		{&hearthv1.AnchorReport{}, "state", []string{storage.AnchorAvailable, storage.AnchorUnavailable}},
		{&hearthv1.CaptureEvent{}, "kind", []string{storage.CaptureEdit, storage.CaptureCommand, storage.CaptureCompact}},
	} {
		name := string(c.msg.ProtoReflect().Descriptor().Name()) + "." + string(c.field)
		if got := arg(c.msg, c.field).GetEnum(); !slices.Equal(got, c.want) {
			t.Errorf("%s: the schema's enum is %q, storage's %q", name, got, c.want)
		}
	}
}

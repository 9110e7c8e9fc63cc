package server

import (
	"fmt"
	"strconv"

	"github.com/grpc-ecosystem/grpc-gateway/v2/protoc-gen-openapiv2/options"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
	"github.com/hearth-memory/hearth/server/budget"
)

// Limits on request values, read once from the field options in the proto
// (openapiv2_field): the one declaration that the validators here, the MCP
// tool schemas and the OpenAPI document all read, so none can promise what
// another does not enforce. A limit the proto does not declare stops the
// process at start.
var (
	maxTitleChars      = argInt(&hearthv1.StoreRequest{}, "title", maxLength)
	maxContentBytes    = argInt(&hearthv1.StoreRequest{}, "content", maxBytes)
	maxAnchors         = argInt(&hearthv1.StoreRequest{}, "anchors", maxItems)
	maxAnchorChars     = argInt(&hearthv1.StoreRequest{}, "anchors", maxLength)
	defaultConfidence  = argFloat(&hearthv1.StoreRequest{}, "confidence", defaultValue)
	maxIDs             = argInt(&hearthv1.GetRequest{}, "ids", maxItems)
	maxReasonChars     = argInt(&hearthv1.ForgetRequest{}, "reason", maxLength)
	maxQueryChars      = argInt(&hearthv1.SearchRequest{}, "query", maxLength)
	maxExclude         = argInt(&hearthv1.SearchRequest{}, "exclude", maxItems)
	defaultSearchLimit = argInt(&hearthv1.SearchRequest{}, "limit", defaultValue)
	maxSearchLimit     = argInt(&hearthv1.SearchRequest{}, "limit", maximum)
	searchRankings     = arg(&hearthv1.SearchRequest{}, "ranking").GetEnum()
	defaultTimeline    = argInt(&hearthv1.TimelineRequest{}, "limit", defaultValue)
	maxTimelineLimit   = argInt(&hearthv1.TimelineRequest{}, "limit", maximum)
	maxBootstrapSessID = argInt(&hearthv1.BootstrapRequest{}, "session_id", maxBytes)
	maxTaskChars       = argInt(&hearthv1.ContextRequest{}, "task", maxLength)
	minContextBudget   = argInt(&hearthv1.ContextRequest{}, "budget_tokens", minimum)
	maxNoteChars       = argInt(&hearthv1.EvidenceRequest{}, "note", maxLength)
	maxSessionIDChars  = argInt(&hearthv1.CloseRequest{}, "session_id", maxLength)
	maxNotesBytes      = argInt(&hearthv1.CloseRequest{}, "notes", maxBytes)
	defaultUnusedLimit = argInt(&hearthv1.UnusedRequest{}, "limit", defaultValue)
	maxUnusedLimit     = argInt(&hearthv1.UnusedRequest{}, "limit", maximum)
	defaultAuditLimit  = argInt(&hearthv1.AuditRequest{}, "limit", defaultValue)
	maxAuditLimit      = argInt(&hearthv1.AuditRequest{}, "limit", maximum)
	maxSearchSessID    = argInt(&hearthv1.SearchRequest{}, "session_id", maxBytes)
	maxGetSessID       = argInt(&hearthv1.GetRequest{}, "session_id", maxBytes)
	defaultQuestions   = argInt(&hearthv1.QuestionsRequest{}, "limit", defaultValue)
	maxQuestions       = argInt(&hearthv1.QuestionsRequest{}, "limit", maximum)
	maxQuestionChars   = argInt(&hearthv1.AddQuestionRequest{}, "text", maxLength)
	maxAnswerTextChars = argInt(&hearthv1.AnswerRequest{}, "text", maxLength)
	maxTimelineTypes   = argInt(&hearthv1.TimelineRequest{}, "types", maxItems)
	maxTimelineStatus  = argInt(&hearthv1.TimelineRequest{}, "statuses", maxItems)
	defaultHistory     = argInt(&hearthv1.HistoryRequest{}, "limit", defaultValue)
	maxHistoryLimit    = argInt(&hearthv1.HistoryRequest{}, "limit", maximum)
	maxReports         = argInt(&hearthv1.ReportAnchorRequest{}, "reports", maxItems)
	maxReportAnchor    = argInt(&hearthv1.ReportAnchorRequest{}, "anchor", maxLength)
	maxReportDetail    = argInt(&hearthv1.ReportAnchorRequest{}, "detail", maxLength)
	maxItemAnchor      = argInt(&hearthv1.AnchorReport{}, "anchor", maxLength)
	maxItemDetail      = argInt(&hearthv1.AnchorReport{}, "detail", maxLength)

	// maxRecordBytes leaves room for the memory_get envelope around one
	// record: a record must fit whole inside the records budget, so that
	// memory_get can always return it (R-B3).
	maxRecordBytes = budget.Records*budget.BytesPerToken - 400
)

// MaxBytesExtension is the OpenAPI extension that bounds a string in bytes of
// UTF-8, which JSON Schema's maxLength (characters) cannot say;
// MaxLinesExtension bounds the lines of a string of lines.
const (
	MaxBytesExtension = "x-max-bytes"
	MaxLinesExtension = "x-max-lines"
)

// argKind picks one limit out of a field's options.
type argKind int

const (
	maxLength argKind = iota
	maxBytes
	maxLines
	maxItems
	minimum
	maximum
	defaultValue
)

// arg returns the openapiv2_field options of field in msg, or nil.
func arg(msg proto.Message, field protoreflect.Name) *options.JSONSchema {
	fd := msg.ProtoReflect().Descriptor().Fields().ByName(field)
	if fd == nil {
		panic(fmt.Sprintf("server: %s has no field %s", msg.ProtoReflect().Descriptor().FullName(), field))
	}
	o, _ := proto.GetExtension(fd.Options(), options.E_Openapiv2Field).(*options.JSONSchema)
	return o
}

// argFloat returns one limit of a field, panicking when the proto does not
// declare it: a validator without its limit must not start.
func argFloat(msg proto.Message, field protoreflect.Name, k argKind) float64 {
	o := arg(msg, field)
	var v float64
	switch k {
	case maxLength:
		v = float64(o.GetMaxLength())
	case maxItems:
		v = float64(o.GetMaxItems())
	case minimum:
		v = o.GetMinimum()
	case maximum:
		v = o.GetMaximum()
	case maxBytes:
		v = o.GetExtensions()[MaxBytesExtension].GetNumberValue()
	case maxLines:
		v = o.GetExtensions()[MaxLinesExtension].GetNumberValue()
	case defaultValue:
		v, _ = strconv.ParseFloat(o.GetDefault(), 64)
	}
	if v == 0 {
		panic(fmt.Sprintf("server: %s.%s declares no limit of kind %d in its openapiv2_field option",
			msg.ProtoReflect().Descriptor().FullName(), field, k))
	}
	return v
}

func argInt(msg proto.Message, field protoreflect.Name, k argKind) int {
	return int(argFloat(msg, field, k))
}

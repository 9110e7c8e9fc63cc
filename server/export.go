package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
	"github.com/hearth-memory/hearth/server/auth"
	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/namespace"
	"github.com/hearth-memory/hearth/storage/screen"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// Limits of export and import, read from the proto like every request limit.
var (
	maxPrefixChars     = argInt(&hearthv1.ExportRequest{}, "namespace_prefix", maxLength)
	defaultExportLimit = argInt(&hearthv1.ExportRequest{}, "limit", defaultValue)
	maxExportLimit     = argInt(&hearthv1.ExportRequest{}, "limit", maximum)
	maxImportChars     = argInt(&hearthv1.ImportRequest{}, "lines", maxLength)
	maxImportBytes     = argInt(&hearthv1.ImportRequest{}, "lines", maxBytes)
	// MaxImportLines bounds the lines of one memory_import call (blank
	// ones too), and maxImportFailures the failures its reply lists: the
	// work and the reply of one call stay bounded however the lines fail
	// (issue #41).
	MaxImportLines    = argInt(&hearthv1.ImportRequest{}, "lines", maxLines)
	maxImportFailures = argInt(&hearthv1.ImportResponse{}, "failed", maxItems)
)

// MaxExportPageBytes is where an export page stops: before the line that
// would take its lines past it (a page holds at least one line). It keeps
// a page well inside what one import call takes.
const MaxExportPageBytes = 512 << 10

// lineJSON writes export lines: proto field names, empty fields left out.
var lineJSON = protojson.MarshalOptions{UseProtoNames: true}

// checkExportRequest validates a memory_export request.
func checkExportRequest(r *hearthv1.ExportRequest) error {
	if p := r.GetNamespacePrefix(); p != "" {
		if err := checkLen("namespace_prefix", p, maxPrefixChars); err != nil {
			return err
		}
		for _, seg := range strings.Split(p, "/") {
			if err := namespace.ValidateSegment(seg); err != nil {
				return invalid("namespace_prefix", "must be a namespace or its first segments: %v", err)
			}
		}
	}
	if c := r.GetCursor(); c != "" && !idPattern.MatchString(c) {
		return invalid("cursor", "must be the next_cursor of the previous page")
	}
	if int(r.GetLimit()) > maxExportLimit {
		return invalid("limit", "must be 1 to %d, got %d", maxExportLimit, r.GetLimit())
	}
	return nil
}

// Export returns one page of JSON Lines (memory_export, export scope).
// Returns INVALID_ARGUMENT naming namespace_prefix, cursor or limit.
func (a *adminService) Export(ctx context.Context, r *hearthv1.ExportRequest) (*hearthv1.ExportResponse, error) {
	if err := checkExportRequest(r); err != nil {
		return nil, toStatus(ctx, a.log, err)
	}
	limit := int(r.GetLimit())
	if limit == 0 {
		limit = defaultExportLimit
	}
	recs, more, err := a.db.Export(ctx, storage.ExportQuery{Prefix: r.GetNamespacePrefix(), After: r.GetCursor(), Limit: limit})
	if err != nil {
		return nil, toStatus(ctx, a.log, err)
	}
	var buf bytes.Buffer
	resp := &hearthv1.ExportResponse{}
	for i, rec := range recs {
		line, err := exportLine(rec)
		if err != nil {
			return nil, toStatus(ctx, a.log, err)
		}
		if i > 0 && buf.Len()+len(line)+1 > MaxExportPageBytes {
			more = true
			break
		}
		buf.Write(line)
		buf.WriteByte('\n')
		resp.Records++
		resp.NextCursor = rec.ID
	}
	if !more {
		resp.NextCursor = ""
	}
	resp.Lines = buf.String()
	return resp, nil
}

// exportLine renders one record as a JSON line (no newline), compact.
func exportLine(rec *storage.ExportedRecord) ([]byte, error) {
	m := &hearthv1.ExportedRecord{
		Id: rec.ID, Namespace: rec.Namespace, Type: rec.Type, Title: rec.Title, Content: rec.Content,
		Status: rec.Status, Revision: uint32(rec.Revision), Writer: rec.Writer, Confidence: rec.Confidence,
		Topics: rec.Topics, Supersedes: rec.Supersedes, SupersededBy: rec.SupersededBy, Source: rec.Source,
		CreatedAt: ts(rec.CreatedAt), UpdatedAt: ts(rec.UpdatedAt),
	}
	for _, an := range rec.Anchors {
		m.Anchors = append(m.Anchors, &hearthv1.ExportedAnchor{Anchor: an.Anchor, State: an.State, CheckedAt: ts(an.CheckedAt), CheckedBy: an.CheckedBy})
	}
	for _, e := range rec.Evidence {
		m.Evidence = append(m.Evidence, &hearthv1.ExportedStance{Client: e.Client, Stance: e.Stance, Note: e.Note, At: ts(e.At)})
	}
	b, err := lineJSON.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("export line %s: %w", rec.ID, err)
	}
	// protojson varies its whitespace; lines are compact and stable.
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		return nil, fmt.Errorf("export line %s: %w", rec.ID, err)
	}
	return out.Bytes(), nil
}

// checkImportRequest validates a memory_import request as a whole; each
// line is checked on its own (parseLine).
func checkImportRequest(r *hearthv1.ImportRequest) error {
	l := r.GetLines()
	switch {
	case strings.TrimSpace(l) == "":
		return invalid("lines", "is required: JSON Lines as memory_export writes them")
	case len(l) > maxImportBytes:
		return invalid("lines", "is %d bytes; at most %d (split the file: hearth import does)", len(l), maxImportBytes)
	}
	if err := checkLen("lines", l, maxImportChars); err != nil {
		return err
	}
	switch {
	case lineCount(l) > MaxImportLines:
		return invalid("lines", "has %d lines; at most %d (split the file: hearth import does)", lineCount(l), MaxImportLines)
	}
	return nil
}

// lineCount is how many lines s holds: a last line without a newline
// counts, an empty string has none.
func lineCount(s string) int {
	n := strings.Count(s, "\n")
	if s != "" && !strings.HasSuffix(s, "\n") {
		n++
	}
	return n
}

// importFailures keeps the first maxImportFailures failures by line
// number and counts them all. Lines fail in two passes (parsing, then
// storage), each in line order, so the list holds at most twice the bound
// before it is cut.
type importFailures struct {
	list  []*hearthv1.ImportFailure
	count int
	// pass is how many of list the current pass added.
	pass int
}

// add records one failure; only the first maxImportFailures of a pass are
// kept.
func (f *importFailures) add(fail *hearthv1.ImportFailure) {
	f.count++
	if f.pass < maxImportFailures {
		f.list = append(f.list, fail)
		f.pass++
	}
}

// next starts the second pass.
func (f *importFailures) next() { f.pass = 0 }

// reply sets the reply's failed (the first by line number) and
// failed_count.
func (f *importFailures) reply(resp *hearthv1.ImportResponse) {
	sortFailures(f.list)
	resp.Failed = f.list[:min(len(f.list), maxImportFailures)]
	resp.FailedCount = uint32(f.count)
}

// firstItems keeps the first items of a refusal's audit detail and counts
// the rest, in memory bounded whatever the request holds.
type firstItems struct {
	items []string
	more  int
}

func (f *firstItems) add(s string) {
	if len(f.items) < maxSummaryItems {
		f.items = append(f.items, s)
		return
	}
	f.more++
}

// maxSummaryItems is how many items a refusal's audit detail names.
const maxSummaryItems = 20

// String joins the items and counts the rest: one audit row per call,
// whatever the request holds.
func (f *firstItems) String() string {
	s := strings.Join(f.items, "; ")
	if f.more > 0 {
		s += fmt.Sprintf("; and %d more", f.more)
	}
	return s
}

// Import writes JSON Lines as records (memory_import, write scope; with
// as_active, admin scope too). A line that fails its checks or the screen,
// or that storage refuses, is reported by number in failed and leaves
// nothing behind; the others are written. Lines refused by the screen are
// audited in one refuse.screen row per call, by line, field and pattern,
// and lines whose id names a record with other content in one
// refuse.conflict row. The reply lists the first maxImportFailures failed
// lines and counts them all (failed_count).
// Returns PERMISSION_DENIED for as_active without admin scope or for a
// client that is not a token client, INVALID_ARGUMENT (field lines) for an
// empty or oversized request, or one of more than MaxImportLines lines.
func (a *adminService) Import(ctx context.Context, r *hearthv1.ImportRequest) (*hearthv1.ImportResponse, error) {
	who, err := writer(ctx)
	if err != nil {
		return nil, err
	}
	if c, _ := auth.FromContext(ctx); r.GetAsActive() && !c.Has(auth.Admin) {
		return nil, status.Error(codes.PermissionDenied, "permission denied: as_active needs admin scope")
	}
	if err := checkImportRequest(r); err != nil {
		return nil, toStatus(ctx, a.log, err)
	}
	resp := &hearthv1.ImportResponse{}
	var (
		items    []storage.ImportItem
		lineNo   []int
		failed   importFailures
		screened firstItems
	)
	rest := r.GetLines()
	for n := 1; rest != ""; n++ {
		var line string
		line, rest, _ = strings.Cut(rest, "\n")
		if line = strings.TrimSpace(line); line == "" {
			continue
		}
		it, err := a.parseLine(line)
		if err != nil {
			f := lineFailure(n, err)
			if f.Pattern != "" {
				screened.add(fmt.Sprintf("line %d field %s pattern %s", f.Line, f.Field, f.Pattern))
			}
			failed.add(f)
			continue
		}
		items = append(items, it)
		lineNo = append(lineNo, n)
	}
	if len(screened.items) > 0 {
		a.refuse(ctx, storage.RefusalEntry{Client: who, Action: storage.ActionRefuseScreen, Detail: "memory_import: " + screened.String()})
	}
	results, err := a.db.Import(ctx, items, storage.ImportOptions{Client: who, AsActive: r.GetAsActive()})
	if err != nil {
		return nil, toStatus(ctx, a.log, err)
	}
	failed.next()
	var conflicts firstItems
	for i, res := range results {
		switch {
		case res.Err != nil:
			failed.add(lineFailure(lineNo[i], res.Err))
			if storage.ErrorCode(res.Err) == storage.Exists {
				conflicts.add(fmt.Sprintf("line %d id %s", lineNo[i], items[i].ID))
			}
		case res.Outcome == storage.Imported:
			resp.Imported++
		default:
			resp.Unchanged++
		}
	}
	if len(conflicts.items) > 0 {
		a.refuse(ctx, storage.RefusalEntry{Client: who, Action: storage.ActionRefuseConflict,
			Detail: "memory_import: a record with the id exists with other content: " + conflicts.String()})
	}
	failed.reply(resp)
	return resp, nil
}

func sortFailures(fs []*hearthv1.ImportFailure) {
	for i := 1; i < len(fs); i++ {
		for j := i; j > 0 && fs[j].Line < fs[j-1].Line; j-- {
			fs[j], fs[j-1] = fs[j-1], fs[j]
		}
	}
}

// lineFailure describes why a line was refused, never echoing its values.
func lineFailure(line int, err error) *hearthv1.ImportFailure {
	f := &hearthv1.ImportFailure{Line: uint32(line)}
	var (
		fe  *fieldError
		ref *screen.Refusal
		se  *storage.Error
	)
	switch {
	case errors.As(err, &ref):
		f.Field, f.Pattern, f.Message = ref.Field, ref.Pattern, "refused: looks like a secret"
	case errors.As(err, &fe):
		f.Field, f.Message = fe.field, fe.msg
	case errors.As(err, &se):
		f.Field, f.Message = se.Field, se.Message
	default:
		f.Message = err.Error()
	}
	// Messages are ours, but a decoder's may quote the line.
	f.Message = screen.Redact(f.Message).String()
	return f
}

// clientNameOrSystem is the form of a writer or evidence client name: a
// client name, or a built-in one such as hearth:page.
var clientNameOrSystem = regexp.MustCompile(`^[a-z0-9][a-z0-9._:-]{0,63}$`)

// lineJSONIn reads lines: proto or JSON field names, unknown fields refused.
var lineJSONIn = protojson.UnmarshalOptions{}

// parseLine checks and screens one line into an import item. Its errors
// name the field in the line (title, anchors[0].state, evidence[1].note).
func (a *adminService) parseLine(line string) (storage.ImportItem, error) {
	var m hearthv1.ExportedRecord
	if err := lineJSONIn.Unmarshal([]byte(line), &m); err != nil {
		return storage.ImportItem{}, invalid("", "not an exported record (a JSON object per line): %s", cutDecoderError(err))
	}
	it := storage.ImportItem{
		ID: m.GetId(), Namespace: m.GetNamespace(), Type: m.GetType(), Confidence: m.GetConfidence(),
		Status: m.GetStatus(), Revision: int(m.GetRevision()), Writer: m.GetWriter(), Source: m.GetSource(),
		Supersedes: m.GetSupersedes(), SupersededBy: m.GetSupersededBy(),
		CreatedAt: timeOf(m.GetCreatedAt()), UpdatedAt: timeOf(m.GetUpdatedAt()),
	}
	if it.ID != "" {
		if err := checkID("id", it.ID); err != nil {
			return it, err
		}
	}
	if err := checkNamespace("namespace", it.Namespace); err != nil {
		return it, err
	}
	if err := storage.CheckType("type", it.Type); err != nil {
		return it, err
	}
	if err := checkTitle("title", m.GetTitle()); err != nil {
		return it, err
	}
	if err := checkContent("content", m.GetContent()); err != nil {
		return it, err
	}
	if it.Confidence == 0 {
		it.Confidence = defaultConfidence
	}
	if err := storage.CheckConfidence("confidence", it.Confidence); err != nil {
		return it, err
	}
	if err := checkTopics("topics", m.GetTopics()); err != nil {
		return it, err
	}
	if it.Status == "" {
		it.Status = storage.StatusActive
	}
	if err := storage.CheckImportStatus("status", it.Status); err != nil {
		return it, err
	}
	if it.Source == "" {
		it.Source = storage.SourceImport
	} else if err := storage.CheckSource("source", it.Source); err != nil {
		return it, err
	}
	for _, f := range []struct{ name, v string }{{"writer", it.Writer}} {
		if f.v != "" && !clientNameOrSystem.MatchString(f.v) {
			return it, invalid(f.name, "must be a client name")
		}
	}
	for _, f := range []struct{ name, v string }{{"supersedes", it.Supersedes}, {"superseded_by", it.SupersededBy}} {
		if f.v != "" {
			if err := checkID(f.name, f.v); err != nil {
				return it, err
			}
		}
	}
	names := make([]string, len(m.GetAnchors()))
	for i, an := range m.GetAnchors() {
		names[i] = an.GetAnchor()
	}
	if err := checkAnchorList(names); err != nil {
		return it, err
	}
	if len(m.GetEvidence()) > maxImportEvidence {
		return it, invalid("evidence", "has %d stances; at most %d", len(m.GetEvidence()), maxImportEvidence)
	}
	// The record must fit the records budget whole, as a stored one does.
	anchors := make([]*hearthv1.Anchor, len(names))
	for i, n := range names {
		anchors[i] = &hearthv1.Anchor{Anchor: n}
	}
	if err := checkRecordSize(a.size, "content", &hearthv1.Record{
		Namespace: it.Namespace, Type: it.Type, Title: m.GetTitle(), Content: m.GetContent(), Confidence: it.Confidence,
		Topics: m.GetTopics(), Anchors: anchors, Supersedes: it.Supersedes, Source: it.Source, Writer: strings.Repeat("w", 64),
	}); err != nil {
		return it, err
	}

	// The screen, over every string the record will keep.
	if _, err := screen.Check("namespace", it.Namespace); err != nil {
		return it, err
	}
	var err error
	if it.Title, err = screen.Check("title", m.GetTitle()); err != nil {
		return it, err
	}
	if it.Content, err = screen.Check("content", m.GetContent()); err != nil {
		return it, err
	}
	if it.Topics, err = screen.CheckAll("topics", m.GetTopics()); err != nil {
		return it, err
	}
	if _, err := screen.Check("writer", it.Writer); err != nil {
		return it, err
	}
	for i, an := range m.GetAnchors() {
		field := fmt.Sprintf("anchors[%d]", i)
		t, err := screen.Anchor(field+".anchor", an.GetAnchor())
		if err != nil {
			return it, err
		}
		state := an.GetState()
		switch state {
		case "":
			state = storage.AnchorUnknown
		case storage.AnchorUnknown, storage.AnchorAvailable, storage.AnchorUnavailable:
		default:
			return it, invalid(field+".state", "must be unknown, available or unavailable")
		}
		if by := an.GetCheckedBy(); by != "" {
			if !clientNameOrSystem.MatchString(by) {
				return it, invalid(field+".checked_by", "must be a client name")
			}
			if _, err := screen.Check(field+".checked_by", by); err != nil {
				return it, err
			}
		}
		it.Anchors = append(it.Anchors, storage.ImportAnchor{Anchor: t, State: state, CheckedAt: timeOf(an.GetCheckedAt()), CheckedBy: an.GetCheckedBy()})
	}
	for i, e := range m.GetEvidence() {
		field := fmt.Sprintf("evidence[%d]", i)
		if !clientNameOrSystem.MatchString(e.GetClient()) {
			return it, invalid(field+".client", "must be a client name")
		}
		if _, err := screen.Check(field+".client", e.GetClient()); err != nil {
			return it, err
		}
		if err := storage.CheckStance(field+".stance", e.GetStance()); err != nil {
			return it, err
		}
		if err := checkBounded(field+".note", e.GetNote(), true, maxNoteChars); err != nil {
			return it, err
		}
		note, err := screen.Check(field+".note", e.GetNote())
		if err != nil {
			return it, err
		}
		it.Evidence = append(it.Evidence, storage.ImportStance{Client: e.GetClient(), Stance: e.GetStance(), Note: note, At: timeOf(e.GetAt())})
	}
	return it, nil
}

// maxImportEvidence bounds the stances one line may carry (one per client).
const maxImportEvidence = 64

// checkAnchorList checks anchor names as a store does, naming the field as
// the line has it (anchors[i].anchor), and refuses repeats.
func checkAnchorList(names []string) error {
	if len(names) > maxAnchors {
		return invalid("anchors", "has %d anchors; at most %d", len(names), maxAnchors)
	}
	seen := map[string]bool{}
	for i, n := range names {
		field := fmt.Sprintf("anchors[%d].anchor", i)
		if err := checkAnchor(field, n); err != nil {
			return err
		}
		if seen[n] {
			return invalid(field, "repeats an earlier anchor")
		}
		seen[n] = true
	}
	return nil
}

// cutDecoderError keeps a JSON decoder's message short; the caller screens
// it, since a decoder may quote the line.
func cutDecoderError(err error) string {
	s := err.Error()
	s = strings.TrimPrefix(s, "proto: ")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

func timeOf(t *timestamppb.Timestamp) time.Time {
	if t == nil || !t.IsValid() {
		return time.Time{}
	}
	return t.AsTime().UTC()
}

package server

import (
	"context"

	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/screen"
)

// anchorService implements memory_anchor_report and memory_anchor_sweep
// (docs/design.md R-H1..R-H3).
type anchorService struct {
	hearthv1.UnimplementedAnchorServiceServer
	*Server
}

var _ hearthv1.AnchorServiceServer = (*anchorService)(nil)

// report is one report of a request, with the prefix its fields are named
// by: "" for the one given by id, "reports[i]." for the list's.
type report struct {
	field                     string
	id, anchor, state, detail string
	maxAnchor, maxDetail      int
}

// reports lists a request's reports: the one given by id (when any of its
// fields is set) first, then the list.
func reports(r *hearthv1.ReportAnchorRequest) []report {
	var out []report
	if r.GetId() != "" || r.GetAnchor() != "" || r.GetState() != "" || r.GetDetail() != "" {
		out = append(out, report{id: r.GetId(), anchor: r.GetAnchor(), state: r.GetState(), detail: r.GetDetail(),
			maxAnchor: maxReportAnchor, maxDetail: maxReportDetail})
	}
	for i, x := range r.GetReports() {
		out = append(out, report{field: fieldIndex("reports", i) + ".", id: x.GetId(), anchor: x.GetAnchor(),
			state: x.GetState(), detail: x.GetDetail(), maxAnchor: maxItemAnchor, maxDetail: maxItemDetail})
	}
	return out
}

// checkReportAnchorRequest validates every report but the screen.
func checkReportAnchorRequest(r *hearthv1.ReportAnchorRequest) ([]report, error) {
	if n := len(r.GetReports()); n > maxReports {
		return nil, invalid("reports", "has %d reports; at most %d (send the rest in another call)", n, maxReports)
	}
	rs := reports(r)
	if len(rs) == 0 {
		return nil, invalid("id", "is required: give id, anchor and state, or reports")
	}
	for _, x := range rs {
		if err := x.check(); err != nil {
			return nil, err
		}
	}
	return rs, nil
}

func (x report) check() error {
	if err := checkID(x.field+"id", x.id); err != nil {
		return err
	}
	if x.anchor == "" {
		return invalid(x.field+"anchor", "is required: one of the record's anchors, as memory_get lists it")
	}
	if err := checkLen(x.field+"anchor", x.anchor, x.maxAnchor); err != nil {
		return err
	}
	if err := checkAnchor(x.field+"anchor", x.anchor); err != nil {
		return err
	}
	if err := storage.CheckReportedState(x.field+"state", x.state); err != nil {
		return err
	}
	return checkBounded(x.field+"detail", x.detail, false, x.maxDetail)
}

// ReportAnchor applies a client's reports on path:, host: and url: anchors
// in one transaction (storage.DB.ReportAnchors): all or none, a repeated
// state changing nothing. Only a token client reports (R-A5).
func (a *anchorService) ReportAnchor(ctx context.Context, r *hearthv1.ReportAnchorRequest) (*hearthv1.ReportAnchorResponse, error) {
	who, err := writer(ctx)
	if err != nil {
		return nil, err
	}
	first := r.GetId()
	if first == "" && len(r.GetReports()) > 0 {
		first = r.GetReports()[0].GetId()
	}
	rs, err := checkReportAnchorRequest(r)
	if err != nil {
		return nil, a.fail(ctx, "", "", err)
	}
	in := make([]storage.AnchorReport, len(rs))
	for i, x := range rs {
		if _, err := screen.Anchor(x.field+"anchor", x.anchor); err != nil {
			return nil, a.fail(ctx, "", first, err)
		}
		detail, err := screen.Check(x.field+"detail", x.detail)
		if err != nil {
			return nil, a.fail(ctx, "", first, err)
		}
		in[i] = storage.AnchorReport{ID: x.id, Anchor: x.anchor, State: x.state, Detail: detail, Field: x.field}
	}
	results, rec, err := a.db.ReportAnchors(ctx, who, in)
	if err != nil {
		return nil, a.fail(ctx, "", first, err)
	}
	resp := &hearthv1.ReportAnchorResponse{}
	if rs[0].field == "" {
		resp.Record = recordToProto(rec)
	}
	changed := map[[2]string]bool{}
	for _, res := range results {
		resp.Results = append(resp.Results, &hearthv1.AnchorReportResult{Id: res.ID, Anchor: res.Anchor, State: res.State,
			Changed: res.Changed, Revision: uint32(res.Revision)})
		if res.Changed {
			changed[[2]string{res.ID, res.Anchor}] = true
		}
	}
	resp.Changed = uint32(len(changed))
	return resp, nil
}

// SweepAnchors checks every entity anchor against Home Assistant now, as
// the scheduled sweep does, and reports the sweep (package sweep).
func (a *anchorService) SweepAnchors(ctx context.Context, _ *hearthv1.SweepAnchorsRequest) (*hearthv1.SweepAnchorsResponse, error) {
	who, err := writer(ctx)
	if err != nil {
		return nil, err
	}
	s, err := a.sweeper.Run(ctx, a.db, who)
	if err != nil {
		return nil, toStatus(ctx, a.log, err)
	}
	return &hearthv1.SweepAnchorsResponse{
		Checked: uint32(s.Checked), Available: uint32(s.Available), Unavailable: uint32(s.Unavailable),
		Unknown: uint32(s.Unknown), HomeAssistant: s.HomeAssistant, Unreachable: s.Unreachable,
		Changed: uint32(s.Changed), Detail: s.Detail, SweptAt: ts(s.At),
	}, nil
}

// flagToProto is a record's anchor flag, or nil when it has none.
func flagToProto(f *storage.AnchorFlag) *hearthv1.AnchorFlag {
	if f == nil || f.Count == 0 {
		return nil
	}
	return &hearthv1.AnchorFlag{Anchor: f.Anchor, Since: ts(f.Since), Count: uint32(f.Count)}
}

// sweepToProto is a recorded sweep, or nil.
func sweepToProto(s *storage.Sweep) *hearthv1.AnchorSweep {
	if s == nil {
		return nil
	}
	return &hearthv1.AnchorSweep{
		SweptAt: ts(s.At), RequestedBy: s.RequestedBy, HomeAssistant: s.HomeAssistant, Unreachable: s.Unreachable,
		Detail: s.Detail, Checked: uint32(s.Checked), Changed: uint32(s.Changed), Available: uint32(s.Available),
		Unavailable: uint32(s.Unavailable), Unknown: uint32(s.Unknown),
	}
}

// flaggedLimit is how many flagged records memory_status lists.
const flaggedLimit = 20

// anchorStatus adds the sweep and the flagged records to resp.
func (s *Server) anchorStatus(ctx context.Context, resp *hearthv1.StatusResponse) error {
	st, err := s.db.AnchorStatus(ctx, flaggedLimit)
	if err != nil {
		return err
	}
	resp.HomeAssistant = s.sweeper.HomeAssistant()
	resp.LastSweep = sweepToProto(st.LastSweep)
	resp.NextSweepAt = ts(st.NextSweep)
	resp.FlaggedTotal = uint32(st.FlaggedTotal)
	for _, f := range st.Flagged {
		resp.Flagged = append(resp.Flagged, &hearthv1.FlaggedRecord{
			Id: f.ID, Namespace: f.Namespace, Type: f.Type, Title: f.Title, Status: f.Status,
			Unavailable: flagToProto(&f.Flag), Detail: f.Detail, CheckedBy: f.CheckedBy,
		})
	}
	return nil
}

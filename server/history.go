package server

import (
	"context"

	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
	"github.com/hearth-memory/hearth/server/budget"
)

func checkHistoryRequest(r *hearthv1.HistoryRequest) error {
	if err := checkID("id", r.GetId()); err != nil {
		return err
	}
	if int(r.GetLimit()) > maxHistoryLimit {
		return invalid("limit", "must be at most %d", maxHistoryLimit)
	}
	return nil
}

// History returns a record with its audit rows, evidence and usage. The
// record always comes whole; the stances (in the order given) and then the
// audit rows (newest first) are packed into the records budget on top of
// it, and left_out counts what did not fit. Reading a history is not a use
// (R-K5 counts search, context and memory_get only).
func (m *memoryService) History(ctx context.Context, r *hearthv1.HistoryRequest) (*hearthv1.HistoryResponse, error) {
	if err := checkHistoryRequest(r); err != nil {
		return nil, toStatus(ctx, m.log, err)
	}
	limit := int(r.GetLimit())
	if limit == 0 {
		limit = defaultHistory
	}
	h, err := m.db.History(ctx, r.GetId(), limit)
	if err != nil {
		return nil, toStatus(ctx, m.log, err)
	}
	resp := &hearthv1.HistoryResponse{TotalEntries: uint32(h.Total)}
	maxBytes := budget.Records * budget.BytesPerToken
	if h.Record != nil {
		resp.Record = recordToProto(h.Record)
		n, err := m.size.Size(resp.Record)
		if err != nil {
			return nil, toStatus(ctx, m.log, err)
		}
		maxBytes += n
		resp.Usage = &hearthv1.RecordUsage{
			Returned: uint32(h.Usage.Returned), Fetched: uint32(h.Usage.Fetched),
			LastReturnedAt: ts(h.Usage.LastReturnedAt), LastFetchedAt: ts(h.Usage.LastFetchedAt),
		}
	}
	stances := make([]*hearthv1.HistoryStance, len(h.Evidence))
	for i, s := range h.Evidence {
		stances[i] = &hearthv1.HistoryStance{Client: s.Client, Stance: s.Stance, Note: s.Note, At: ts(s.At)}
	}
	entries := make([]*hearthv1.HistoryEntry, len(h.Entries))
	for i, e := range h.Entries {
		entries[i] = &hearthv1.HistoryEntry{
			At: ts(e.At), Client: e.Client, Action: string(e.Action), Revision: uint32(e.Revision), Detail: e.Detail.String(),
		}
	}
	ev, err := budget.Pack(m.size, resp, resp.SetEvidence, stances, budget.Options{MaxBytes: maxBytes})
	if err != nil {
		return nil, toStatus(ctx, m.log, err)
	}
	if _, err := budget.Pack(m.size, resp, resp.SetEntries, entries, budget.Options{MaxBytes: maxBytes, More: ev.LeftOut}); err != nil {
		return nil, toStatus(ctx, m.log, err)
	}
	return resp, nil
}

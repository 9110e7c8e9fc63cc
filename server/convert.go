package server

import (
	"time"

	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
	"github.com/hearth-memory/hearth/storage"
	"google.golang.org/protobuf/types/known/timestamppb"
)

func ts(t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	return timestamppb.New(t)
}

func recordToProto(r *storage.Record) *hearthv1.Record {
	if r == nil {
		return nil
	}
	p := &hearthv1.Record{
		Id:                  r.ID,
		Namespace:           r.Namespace,
		Type:                r.Type,
		Title:               r.Title,
		Content:             r.Content,
		Status:              r.Status,
		Revision:            uint32(r.Revision),
		Writer:              r.Writer,
		Confidence:          r.Confidence,
		EffectiveConfidence: r.EffectiveConfidence,
		ProofCount:          uint32(r.ProofCount),
		RefutationCount:     uint32(r.RefutationCount),
		Supersedes:          r.Supersedes,
		SupersededBy:        r.SupersededBy,
		Topics:              r.Topics,
		Source:              r.Source,
		CreatedAt:           ts(r.CreatedAt),
		UpdatedAt:           ts(r.UpdatedAt),
	}
	for _, a := range r.Anchors {
		p.Anchors = append(p.Anchors, &hearthv1.Anchor{Anchor: a.Anchor, State: a.State, CheckedAt: ts(a.CheckedAt), CheckedBy: a.CheckedBy})
	}
	return p
}

func recordsToProto(rs []*storage.Record) []*hearthv1.Record {
	out := make([]*hearthv1.Record, len(rs))
	for i, r := range rs {
		out[i] = recordToProto(r)
	}
	return out
}

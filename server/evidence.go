package server

import (
	"context"
	"strconv"

	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/screen"
)

// checkEvidenceRequest validates everything about evidence but the screen.
func checkEvidenceRequest(r *hearthv1.EvidenceRequest) error {
	if err := checkID("id", r.GetId()); err != nil {
		return err
	}
	if err := storage.CheckStance("stance", r.GetStance()); err != nil {
		return err
	}
	return checkBounded("note", r.GetNote(), true, maxNoteChars)
}

// Evidence records the caller's stance on a record (R-E1, R-E2). The stance
// is the token client's: one per client per record, a later call replacing
// the earlier one, and a writer's corroboration of its own record not
// counted (see storage.DB.Evidence).
func (m *memoryService) Evidence(ctx context.Context, r *hearthv1.EvidenceRequest) (*hearthv1.EvidenceResponse, error) {
	who, err := writer(ctx)
	if err != nil {
		return nil, err
	}
	if err := checkEvidenceRequest(r); err != nil {
		return nil, m.fail(ctx, "", r.GetId(), err)
	}
	note, err := screen.Check("note", r.GetNote())
	if err != nil {
		return nil, m.fail(ctx, "", r.GetId(), err)
	}
	rec, err := m.db.Evidence(ctx, r.GetId(), who, r.GetStance(), note)
	if err != nil {
		return nil, m.fail(ctx, "", r.GetId(), err)
	}
	return &hearthv1.EvidenceResponse{Record: recordToProto(rec), Why: evidenceWhy(rec)}, nil
}

// evidenceWhy explains a record's effective confidence (R-E2): "N for/M
// against", or "asserted, unwitnessed" while no counted evidence exists.
func evidenceWhy(r *storage.Record) string {
	if r.ProofCount+r.RefutationCount == 0 {
		return "asserted, unwitnessed"
	}
	return strconv.Itoa(r.ProofCount) + " for/" + strconv.Itoa(r.RefutationCount) + " against"
}

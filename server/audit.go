package server

import (
	"context"

	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
)

// checkAuditRequest validates a memory_audit request: limit is 0 (the
// default) or 1 to maxAuditLimit.
func checkAuditRequest(r *hearthv1.AuditRequest) error {
	if int(r.GetLimit()) > maxAuditLimit {
		return invalid("limit", "must be 1 to %d, got %d", maxAuditLimit, r.GetLimit())
	}
	return nil
}

// Audit returns the newest audit rows, newest first (memory_audit, admin
// scope). Details were screened when the rows were written. Returns
// INVALID_ARGUMENT (field limit) for a limit over 500.
func (a *adminService) Audit(ctx context.Context, r *hearthv1.AuditRequest) (*hearthv1.AuditResponse, error) {
	if err := checkAuditRequest(r); err != nil {
		return nil, toStatus(ctx, a.log, err)
	}
	limit := int(r.GetLimit())
	if limit == 0 {
		limit = defaultAuditLimit
	}
	rows, err := a.db.AuditLog(ctx, limit)
	if err != nil {
		return nil, toStatus(ctx, a.log, err)
	}
	resp := &hearthv1.AuditResponse{Entries: make([]*hearthv1.AuditEntry, 0, len(rows))}
	for _, e := range rows {
		resp.Entries = append(resp.Entries, &hearthv1.AuditEntry{
			At:        ts(e.At),
			Client:    e.Client,
			Action:    string(e.Action),
			Namespace: e.Namespace,
			RecordId:  e.RecordID,
			Detail:    e.Detail.String(),
		})
	}
	return resp, nil
}

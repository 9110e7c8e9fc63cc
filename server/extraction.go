package server

import (
	"context"
	"encoding/json"
	"strings"
	"unicode"

	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/screen"
	"google.golang.org/grpc/codes"
)

var (
	defaultReceipts = argInt(&hearthv1.ExtractionReceiptsRequest{}, "limit", defaultValue)
	maxReceipts     = argInt(&hearthv1.ExtractionReceiptsRequest{}, "limit", maximum)
	maxRerunModel   = argInt(&hearthv1.ExtractionRerunRequest{}, "model", maxLength)
)

// checkReceiptsRequest validates a memory_extraction_receipts request.
func checkReceiptsRequest(r *hearthv1.ExtractionReceiptsRequest) error {
	if id := r.GetId(); id != "" && !idPattern.MatchString(id) {
		return invalid("id", "is not a receipt id (26 characters, e.g. 01JD3M5ZK9Q8W7E6R5T4Y3X2V1)")
	}
	if int(r.GetLimit()) > maxReceipts {
		return invalid("limit", "must be 1 to %d, got %d", maxReceipts, r.GetLimit())
	}
	return nil
}

// ExtractionReceipts returns extraction receipts, newest first, or the one
// named (memory_extraction_receipts, admin scope). What they hold passed the
// screen when they were written. Returns INVALID_ARGUMENT (field id or
// limit) for a malformed id or a limit over the maximum, NOT_FOUND (field
// id) for an unknown receipt.
func (a *adminService) ExtractionReceipts(ctx context.Context, r *hearthv1.ExtractionReceiptsRequest) (*hearthv1.ExtractionReceiptsResponse, error) {
	if err := checkReceiptsRequest(r); err != nil {
		return nil, toStatus(ctx, a.log, err)
	}
	limit := int(r.GetLimit())
	if limit == 0 {
		limit = defaultReceipts
	}
	rs, err := a.db.ExtractionReceipts(ctx, r.GetId(), limit)
	if err != nil {
		return nil, toStatus(ctx, a.log, err)
	}
	resp := &hearthv1.ExtractionReceiptsResponse{Receipts: make([]*hearthv1.ExtractionReceipt, 0, len(rs))}
	for _, x := range rs {
		er := &hearthv1.ExtractionReceipt{
			Id: x.ID, JobId: x.JobID, CreatedAt: ts(x.CreatedAt), Namespace: x.Namespace, Client: x.Client,
			Outcome: x.Outcome, Server: x.Server, Model: x.Model, Input: x.Input.String(), Reply: x.Reply.String(),
			Kept: x.Kept, Error: x.Error.String(), RerunOf: x.RerunOf,
		}
		if er.Kept == nil {
			er.Kept = []string{}
		}
		for _, f := range x.Refused {
			er.Refused = append(er.Refused, &hearthv1.RefusedMemory{Index: uint32(f.Index), Reason: f.Reason})
		}
		resp.Receipts = append(resp.Receipts, er)
	}
	return resp, nil
}

// checkRerunRequest validates a memory_extraction_rerun request: a model
// name is 1 to 256 bytes with no space or control character, as
// ollama_model.
func checkRerunRequest(r *hearthv1.ExtractionRerunRequest) error {
	if err := checkID("receipt_id", r.GetReceiptId()); err != nil {
		return err
	}
	m := r.GetModel()
	if len(m) > maxRerunModel {
		return invalid("model", "is %d bytes; at most %d", len(m), maxRerunModel)
	}
	if strings.ContainsFunc(m, func(c rune) bool { return unicode.IsSpace(c) || !unicode.IsPrint(c) }) {
		return invalid("model", "must be a model name: printable, without spaces")
	}
	return nil
}

// ExtractionRerun queues the extraction of a receipt again
// (memory_extraction_rerun, admin scope): a new extraction job reads the
// receipt's input, screened as it was kept, with the given model instead of
// the extraction chain when one is named, and its own receipt names the one
// it reruns. The job's key is the receipt and the model, so asking twice
// queues one job. Audited as "extract.rerun". Returns INVALID_ARGUMENT
// (field receipt_id or model) and NOT_FOUND (field receipt_id) for an
// unknown receipt.
func (a *adminService) ExtractionRerun(ctx context.Context, r *hearthv1.ExtractionRerunRequest) (*hearthv1.ExtractionRerunResponse, error) {
	if err := checkRerunRequest(r); err != nil {
		return nil, toStatus(ctx, a.log, err)
	}
	// The model name goes into the job and the audit: it passes the screen
	// like any text kept.
	if _, err := screen.Check("model", r.GetModel()); err != nil {
		return nil, a.fail(ctx, "", "", err)
	}
	rs, err := a.db.ExtractionReceipts(ctx, r.GetReceiptId(), 1)
	if storage.ErrorCode(err) == storage.NotFound {
		return nil, withDetail(codes.NotFound, "receipt_id: no extraction receipt has this id", &hearthv1.ErrorDetail{Field: "receipt_id"})
	}
	if err != nil {
		return nil, toStatus(ctx, a.log, err)
	}
	var payload map[string]any
	if err := json.Unmarshal([]byte(rs[0].Input.String()), &payload); err != nil || payload == nil {
		return nil, toStatus(ctx, a.log, invalid("receipt_id", "the receipt's input is not a job payload"))
	}
	delete(payload, "model")
	if m := r.GetModel(); m != "" {
		payload["model"] = m
	}
	payload["rerun_of"] = rs[0].ID
	b, err := json.Marshal(payload)
	if err != nil {
		return nil, toStatus(ctx, a.log, err)
	}
	job, created, err := a.db.EnqueueJob(ctx, storage.NewJob{Kind: storage.KindExtraction, Payload: screen.Redact(string(b)),
		Key: "extraction-rerun@" + rs[0].ID + "@" + r.GetModel()})
	if err != nil {
		return nil, toStatus(ctx, a.log, err)
	}
	if created {
		detail := "receipt " + rs[0].ID + " queued again as job " + job.ID
		if m := r.GetModel(); m != "" {
			detail += " with model " + m
		}
		if err := a.db.Audit(ctx, storage.AuditEntry{Client: client(ctx), Action: storage.ActionExtractRerun,
			Namespace: rs[0].Namespace, Detail: screen.Redact(detail)}); err != nil {
			return nil, toStatus(ctx, a.log, err)
		}
	}
	return &hearthv1.ExtractionRerunResponse{JobId: job.ID, Queued: created}, nil
}

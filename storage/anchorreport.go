package storage

import (
	"context"

	"github.com/hearth-memory/hearth/storage/internal/anchors"
	"github.com/hearth-memory/hearth/storage/internal/audit"
	"github.com/hearth-memory/hearth/storage/screen"
)

// ReportAnchors applies client's reports, in order, in one transaction, and
// returns a result per report and the record the first report names as it
// then stands (docs/design.md R-H1, R-R6). An anchor whose state the reports leave as
// it was is not touched: no revision, no audit row, its checked_at kept.
// Each record whose anchors changed advances its revision once and gets one
// audit row (ActionAnchor) naming every change; the anchors take the time,
// the client (checked_by) and the detail of the report that set them.
//
// Clients report path:, host: and url: anchors; entity: anchors are the
// sweep's (Sweep). It returns Invalid for no reports or an empty client,
// for a report anchors.Report.Validate refuses, or a record that is
// superseded or deleted (Field "<prefix>id"); NotFound (Field
// "<prefix>id") for an unknown record and NotFound (Field
// "<prefix>anchor") for an anchor the record does not have. A refusal
// writes nothing.
func (db *DB) ReportAnchors(ctx context.Context, client string, reports []AnchorReport) ([]AnchorResult, *Record, error) {
	switch {
	case client == "":
		return nil, nil, errorf(Invalid, "client", "is required")
	case len(reports) == 0:
		return nil, nil, errorf(Invalid, "reports", "names no anchor")
	}
	for _, r := range reports {
		if err := r.Validate(); err != nil {
			return nil, nil, lift(err)
		}
	}
	var (
		results []AnchorResult
		first   *Record
	)
	if err := db.writeGrouped(ctx, "report anchors", func(tx *txn) (err error) {
		results, first, err = reportAnchorsTx(ctx, tx, client, reports)
		return err
	}); err != nil {
		return nil, nil, err
	}
	return results, first, nil
}

// CheckReportedState refuses a reported anchor state other than available
// or unavailable: Invalid naming field.
func CheckReportedState(field, s string) error {
	return lift(anchors.CheckReportedState(field, s))
}

// reportAnchorsTx applies validated reports inside the caller's transaction.
func reportAnchorsTx(ctx context.Context, tx *txn, client string, reports []AnchorReport) ([]AnchorResult, *Record, error) {
	recs := map[string]*Record{}
	changes, err := anchors.Gather(reports, tx.Now, client, func(r *AnchorReport) (*anchors.Owner, error) {
		rec := recs[r.ID]
		if rec == nil {
			var err error
			if rec, err = findRecordTx(ctx, tx, r.ID); err != nil {
				if ErrorCode(err) == NotFound {
					return nil, errorf(NotFound, r.Field+"id", "no record has this id")
				}
				return nil, err
			}
			if !rec.Live() {
				return nil, errorf(Invalid, r.Field+"id", "record is %s; anchors are reported on active and candidate records", rec.Status)
			}
			recs[r.ID] = rec
		}
		return &anchors.Owner{Namespace: rec.Namespace, Anchors: rec.Anchors}, nil
	})
	if err != nil {
		return nil, nil, err
	}
	revisions := make(map[string]int, len(recs))
	for id, r := range recs {
		revisions[id] = r.Revision
	}
	if err := applyAnchorChangesTx(ctx, tx, client, "", changes, revisions); err != nil {
		return nil, nil, err
	}
	first, err := findRecordTx(ctx, tx, reports[0].ID)
	if err != nil {
		return nil, nil, err
	}
	return anchors.Results(reports, changes, revisions), first, nil
}

// applyAnchorChangesTx writes the anchors of changes whose state differs
// from what it was (anchors.Apply), advances each such record's revision
// once, in revisions too when given, and writes its audit row as client,
// the detail prefixed by prefix. Each write is one set-based statement:
// a sweep may change thousands of anchors.
func applyAnchorChangesTx(ctx context.Context, tx *txn, client, prefix string, changes map[anchors.Key]*anchors.Change, revisions map[string]int) error {
	touched, err := anchors.Apply(ctx, tx, changes)
	if err != nil || len(touched) == 0 {
		return err
	}
	ids := make([]string, len(touched))
	entries := make([]AuditEntry, len(touched))
	for i, t := range touched {
		ids[i] = t.ID
		if revisions != nil {
			revisions[t.ID]++
		}
		entries[i] = AuditEntry{Client: client, Action: ActionAnchor, Namespace: t.Namespace, RecordID: t.ID,
			Detail: screen.Redact(prefix + t.Detail)}
	}
	if _, err := tx.ExecContext(ctx, `
		UPDATE records SET revision = revision + 1, updated_at = ? WHERE id IN (SELECT value FROM json_each(?))`,
		tx.Now.UnixMilli(), jsonList(ids),
	); err != nil {
		return classify("anchor state", err)
	}
	return audit.InsertMany(ctx, tx, entries)
}

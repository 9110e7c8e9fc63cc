package storage

import (
	"context"

	"github.com/hearth-memory/hearth/storage/internal/anchors"
	"github.com/hearth-memory/hearth/storage/screen"
)

// The stored side of anchors is package anchors (docs/design.md, "Storage
// layout"); these are its names as the server uses them.
type (
	// Anchor is a thing a record depends on with the check that gave it
	// its state.
	Anchor = anchors.Anchor
	// AnchorFlag marks a record with an unavailable anchor (docs/design.md R-H2).
	AnchorFlag = anchors.Flag
	// AnchorReport is what a client found about one anchor of one record
	// (memory_anchor_report).
	AnchorReport = anchors.Report
	// AnchorResult is where one report left its anchor.
	AnchorResult = anchors.Result
	// FlaggedRecord is a live record with an unavailable anchor.
	FlaggedRecord = anchors.FlaggedRecord
)

// Anchor states (docs/design.md R-H1). New anchors are unknown until checked.
const (
	AnchorUnknown     = anchors.Unknown
	AnchorAvailable   = anchors.Available
	AnchorUnavailable = anchors.Unavailable
)

// attachAnchorsTx loads the anchors of recs, in their stored order.
func attachAnchorsTx(ctx context.Context, tx *txn, recs []*Record) error {
	ids := make([]string, len(recs))
	for i, r := range recs {
		ids[i] = r.ID
	}
	byID, err := anchors.Load(ctx, tx, ids)
	for _, r := range recs {
		if as := byID[r.ID]; len(as) > 0 {
			r.Anchors = append(r.Anchors, as...)
		}
	}
	return err
}

// insertAnchorsTx writes anchors for record id in the order given.
func insertAnchorsTx(ctx context.Context, tx *txn, id string, as []Anchor) error {
	return anchors.Insert(ctx, tx, id, as)
}

// CheckAnchor refuses, as Invalid naming field, an anchor that the anchor
// parser refuses (anchors.Check).
func CheckAnchor(field, a string) error { return lift(anchors.Check(field, a)) }

// parseAnchors is CheckAnchor on each anchor of a list, naming "<field>[i]".
func parseAnchors(field string, as []screen.Text) error {
	return lift(anchors.CheckList(field, as))
}

// Unavailable returns the record's flag, or nil when no anchor of it is
// unavailable.
func (r *Record) Unavailable() *AnchorFlag { return anchors.FlagOf(r.Anchors) }

package page

import (
	"time"

	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
)

// The anchors panel: the entity sweep's line in the jobs section and the
// records flagged by an unavailable anchor (docs/design.md §16, R-H2), both from
// memory_status.

// anchorsView is the flagged records section.
type anchorsView struct {
	// Err says why memory_status could not be read; Total counts the
	// flagged records, Rows lists the latest, More how many are not shown.
	Err   string
	Total uint32
	Rows  []flaggedRow
	More  uint32
}

type flaggedRow struct {
	ID, Title, Namespace, Type, Status, Anchor, Since, Detail, CheckedBy string
	Count                                                                uint32
}

// anchors builds the sweep's job line and the flagged records section from
// memory_status (st, or statusErr when it failed).
func (h *Handler) anchors(st *hearthv1.StatusResponse, statusErr string, loc *time.Location) (jobLine, anchorsView) {
	j := jobLine{Schedule: "every " + itoa(h.cfg.AnchorSweepHours) + " h (anchor_sweep_hours)"}
	if statusErr != "" {
		j.State, j.Detail = "unknown", "memory_status could not be read."
		return j, anchorsView{Err: statusErr}
	}
	if next := st.GetNextSweepAt(); next != nil {
		j.Schedule += "; next " + next.AsTime().In(loc).Format(timeLayout)
	}
	if !st.GetHomeAssistant() {
		j.Schedule = "off: entity anchors are checked only inside Home Assistant"
	}
	switch s := st.GetLastSweep(); {
	case s == nil && !st.GetHomeAssistant():
		j.State, j.Detail = "never run", "Hearth runs outside Home Assistant: entity anchors (entity:…) are not checked and stay unknown."
	case s == nil:
		j.State, j.Detail = "never run", "Entity anchors are checked against Home Assistant once the first sweep runs."
	default:
		j.State = "last run " + s.GetSweptAt().AsTime().In(loc).Format(timeLayout) + " by " + s.GetRequestedBy()
		switch {
		case !s.GetHomeAssistant():
			j.Detail = "Hearth runs outside Home Assistant: entity anchors are not checked (" +
				itoa(s.GetUnknown()) + " stay unknown)."
		case s.GetUnreachable():
			j.Detail = "Home Assistant unreachable, nothing changed: " + s.GetDetail()
		default:
			j.Detail = "checked " + itoa(s.GetChecked()) + " entity anchors, changed " + itoa(s.GetChanged()) + ": " +
				itoa(s.GetAvailable()) + " available, " + itoa(s.GetUnavailable()) + " unavailable, " +
				itoa(s.GetUnknown()) + " unknown."
		}
	}
	v := anchorsView{Total: st.GetFlaggedTotal()}
	for _, f := range st.GetFlagged() {
		row := flaggedRow{ID: f.GetId(), Title: f.GetTitle(), Namespace: f.GetNamespace(), Type: f.GetType(),
			Status: f.GetStatus(), Anchor: f.GetUnavailable().GetAnchor(), Count: f.GetUnavailable().GetCount(),
			Detail: f.GetDetail(), CheckedBy: f.GetCheckedBy(), Since: "–"}
		if since := f.GetUnavailable().GetSince(); since != nil {
			row.Since = since.AsTime().In(loc).Format(timeLayout)
		}
		v.Rows = append(v.Rows, row)
	}
	if n := uint32(len(v.Rows)); v.Total > n {
		v.More = v.Total - n
	}
	return j, v
}

package page

import (
	"time"

	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
)

// vectorsView is the encoder panel: whether the encoder is live, its model
// and snapshot, and the live records by the state of their vector, as
// memory_status reports them (a bar drawn in SVG).
type vectorsView struct {
	Shown                                  bool
	State, Model, Snapshot, Dim, LastProbe string
	Error                                  string
	// Counted says memory_status gave the vector counts: it leaves them
	// out until the vector index has loaded for the encoder's model and
	// snapshot.
	Counted                        bool
	Current, Stale, Missing, Total uint32
	Bars                           []vectorBar
	Note                           string
}

type vectorBar struct {
	Key, Label, Color string
	N                 uint32
	X, W              float64
}

// vectorsWidth is the bar's width in SVG units.
const vectorsWidth = 600

func newVectorsView(e *hearthv1.EncoderStatus, loc *time.Location) vectorsView {
	if !e.GetConfigured() {
		return vectorsView{}
	}
	v := vectorsView{Shown: true, State: "down", Model: e.GetModel(), Snapshot: e.GetSnapshot(), Error: e.GetError(),
		Counted: e.HasVectorsCurrent() && e.HasVectorsStale() && e.HasVectorsMissing(),
		Current: e.GetVectorsCurrent(), Stale: e.GetVectorsStale(), Missing: e.GetVectorsMissing(), LastProbe: "never"}
	switch {
	case e.GetLive():
		v.State = "live"
	case e.GetLastProbe() == nil:
		v.State = "not probed yet"
	}
	if e.GetLastProbe() != nil {
		v.LastProbe = e.GetLastProbe().AsTime().In(loc).Format(timeLayout)
	}
	if v.Snapshot == "" {
		v.Snapshot = "not read yet"
	}
	v.Dim = "–"
	if e.GetDim() > 0 {
		v.Dim = itoa(e.GetDim())
	}
	v.Total = v.Current + v.Stale + v.Missing
	x := 0.0
	for _, b := range []vectorBar{
		{Key: "current", Label: "current", Color: "#3fb950", N: v.Current},
		{Key: "stale", Label: "stale", Color: "#d29922", N: v.Stale},
		{Key: "missing", Label: "missing", Color: "#f85149", N: v.Missing},
	} {
		if v.Total > 0 {
			b.W = float64(b.N) / float64(v.Total) * vectorsWidth
		}
		b.X = x
		x += b.W
		v.Bars = append(v.Bars, b)
	}
	switch {
	case !e.GetLive():
		v.Note = "Search ranks by full text until the encoder answers a probe (every 30 s)."
	case v.Stale+v.Missing > 0:
		v.Note = "Search ranks by full text where a record in scope has no current vector, until the worker embeds it."
	default:
		v.Note = "Search fuses full text with embeddings (ranking rrf)."
	}
	return v
}

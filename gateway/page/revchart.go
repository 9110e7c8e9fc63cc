package page

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
)

// Audit action colours in the record view; refusals share one, actions not
// listed get otherColor.
var actionColors = []struct{ action, color string }{
	{"store", "#4fb89a"},
	{"update", "#5b9ee6"},
	{"evidence", "#e3b341"},
	{"supersede", "#7d8fd6"},
	{"forget", "#c8645f"},
	{"refuse", "#f0908a"},
}

func actionColor(a string) string {
	if strings.HasPrefix(a, "refuse.") {
		a = "refuse"
	}
	for _, c := range actionColors {
		if c.action == a {
			return c.color
		}
	}
	return otherColor
}

// revisionPoint is one audit row on the revision chart.
type revisionPoint struct {
	X, Y     string
	Color    string
	Title    string
	Revision uint32
}

// revisionChart draws a record's revision over time: a step line through
// the audit rows that carry a revision, oldest left, each row a dot coloured
// by its action.
type revisionChart struct {
	Points []revisionPoint
	Line   string // polyline points
	Width  int
	Max    uint32
	// Labels are the first and last times drawn.
	From, To string
	ToX      string
	Legend   []legendItem
	LegendY  string
	Height   int
}

// newRevisionChart draws entries (newest first, as memory_history returns
// them). Rows without a revision (written before revisions were kept) are
// left out; with none left the chart is empty.
func newRevisionChart(entries []*hearthv1.HistoryEntry, loc *time.Location) revisionChart {
	const width, axisX, right, top, plotH = 1200, 40.0, 20.0, 10.0, 80.0
	ch := revisionChart{Width: width}
	var es []*hearthv1.HistoryEntry
	for i := len(entries) - 1; i >= 0; i-- {
		if entries[i].GetRevision() > 0 {
			es = append(es, entries[i])
			ch.Max = max(ch.Max, entries[i].GetRevision())
		}
	}
	if len(es) == 0 {
		return ch
	}
	t0, t1 := es[0].GetAt().AsTime(), es[len(es)-1].GetAt().AsTime()
	span := t1.Sub(t0)
	plotW := width - axisX - right
	// Time decides x; rows at one instant (or a single row) are spread
	// evenly, so every dot can be seen.
	x := func(i int, t time.Time) float64 {
		if span <= 0 {
			if len(es) == 1 {
				return axisX + plotW/2
			}
			return axisX + plotW*float64(i)/float64(len(es)-1)
		}
		return axisX + plotW*float64(t.Sub(t0))/float64(span)
	}
	y := func(rev uint32) float64 {
		if ch.Max <= 1 {
			return top + plotH
		}
		return top + plotH - plotH*float64(rev-1)/float64(ch.Max-1)
	}
	var line []string
	seen := map[string]bool{}
	for i, e := range es {
		px, py := x(i, e.GetAt().AsTime()), y(e.GetRevision())
		if i > 0 {
			line = append(line, num(px)+","+num(y(es[i-1].GetRevision())))
		}
		line = append(line, num(px)+","+num(py))
		ch.Points = append(ch.Points, revisionPoint{
			X: num(px), Y: num(py), Color: actionColor(e.GetAction()), Revision: e.GetRevision(),
			Title: fmt.Sprintf("%s: %s %s, revision %d", e.GetAt().AsTime().In(loc).Format(timeLayout), e.GetClient(), e.GetAction(), e.GetRevision()),
		})
		a := e.GetAction()
		if strings.HasPrefix(a, "refuse.") {
			a = "refusal"
		}
		seen[a] = true
	}
	ch.Line = strings.Join(line, " ")
	ch.From = t0.In(loc).Format(timeLayout)
	ch.To = t1.In(loc).Format(timeLayout)
	ch.ToX = num(width - right)
	lx := axisX
	ly := top + plotH + 34
	for _, c := range actionColors {
		label := c.action
		if label == "refuse" {
			label = "refusal"
		}
		if seen[label] {
			ch.Legend = append(ch.Legend, legendItem{X: num(lx), Color: c.color, Label: label})
			lx += 112
			delete(seen, label)
		}
	}
	for _, a := range slices.Sorted(maps.Keys(seen)) {
		ch.Legend = append(ch.Legend, legendItem{X: num(lx), Color: otherColor, Label: a})
		lx += 112
	}
	ch.LegendY = num(ly)
	ch.Height = int(ly) + 16
	return ch
}

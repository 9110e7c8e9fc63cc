package page

import (
	"fmt"
	"sort"
	"strconv"
	"time"

	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
)

// Chart geometry, in SVG user units. The charts that share a row are
// chartWidth wide; every chart scales to the page with its viewBox.
const (
	chartWidth = 600
	rowHeight  = 24
)

// Status colours, in the order the legend lists them; other statuses get
// otherColor.
var statusColors = []struct{ status, color string }{
	{"active", "#4fb89a"},
	{"candidate", "#e3b341"},
	{"superseded", "#7d8fd6"},
	{"deleted", "#c8645f"},
}

const otherColor = "#8b95a5"

func statusColor(s string) string {
	for _, c := range statusColors {
		if c.status == s {
			return c.color
		}
	}
	return otherColor
}

func statusRank(s string) int {
	for i, c := range statusColors {
		if c.status == s {
			return i
		}
	}
	return len(statusColors)
}

// num formats an SVG coordinate.
func num(f float64) string { return strconv.FormatFloat(f, 'f', 1, 64) }

// segment is one rectangle of a bar; Href lists its records.
type segment struct {
	X, W  string
	Color string
	Title string
	Href  string
}

// legendItem is one swatch of a legend.
type legendItem struct {
	X     string
	Color string
	Label string
}

// typeRow is one record type: a bar stacked by status.
type typeRow struct {
	Type   string
	Total  int
	Y      string // top of the row
	BarY   string
	TextY  string
	Segs   []segment
	CountX string
}

// typeChart draws records by type and status.
type typeChart struct {
	Rows    []typeRow
	Legend  []legendItem
	LegendY string
	Width   int
	Height  int
}

// newTypeChart stacks counts by type, the biggest type first, each bar
// split by status (active, candidate, superseded, deleted, then any other).
func newTypeChart(counts []*hearthv1.TypeStatusCount) typeChart {
	const barX, barMax = 110.0, 430.0
	byType := map[string][]*hearthv1.TypeStatusCount{}
	totals := map[string]int{}
	statuses := map[string]bool{}
	for _, c := range counts {
		if c.GetCount() == 0 {
			continue
		}
		byType[c.GetType()] = append(byType[c.GetType()], c)
		totals[c.GetType()] += int(c.GetCount())
		statuses[c.GetStatus()] = true
	}
	types := make([]string, 0, len(byType))
	most := 0
	for t, n := range totals {
		types = append(types, t)
		most = max(most, n)
	}
	sort.Slice(types, func(i, j int) bool {
		if totals[types[i]] != totals[types[j]] {
			return totals[types[i]] > totals[types[j]]
		}
		return types[i] < types[j]
	})
	ch := typeChart{Width: chartWidth}
	for i, t := range types {
		cs := byType[t]
		sort.Slice(cs, func(a, b int) bool {
			ra, rb := statusRank(cs[a].GetStatus()), statusRank(cs[b].GetStatus())
			if ra != rb {
				return ra < rb
			}
			return cs[a].GetStatus() < cs[b].GetStatus()
		})
		y := float64(i * rowHeight)
		row := typeRow{Type: t, Total: totals[t], Y: num(y), BarY: num(y + 4), TextY: num(y + 16)}
		x := barX
		for _, c := range cs {
			w := barMax * float64(c.GetCount()) / float64(most)
			row.Segs = append(row.Segs, segment{
				X: num(x), W: num(w), Color: statusColor(c.GetStatus()),
				Title: fmt.Sprintf("%s %s: %d", t, c.GetStatus(), c.GetCount()),
				Href:  filter{Type: t, Status: c.GetStatus()}.href(),
			})
			x += w
		}
		row.CountX = num(x + 8)
		ch.Rows = append(ch.Rows, row)
	}
	legendY := len(types)*rowHeight + 8
	ch.LegendY = num(float64(legendY))
	lx := barX
	for _, c := range statusColors {
		ch.Legend = append(ch.Legend, legendItem{X: num(lx), Color: c.color, Label: c.status})
		lx += 112
		delete(statuses, c.status)
	}
	others := make([]string, 0, len(statuses))
	for s := range statuses {
		others = append(others, s)
	}
	sort.Strings(others)
	for _, s := range others {
		ch.Legend = append(ch.Legend, legendItem{X: num(lx), Color: otherColor, Label: s})
		lx += 112
	}
	ch.Height = legendY + 22
	return ch
}

// nsRow is one namespace bar.
type nsRow struct {
	Namespace string
	Label     string // shortened to fit
	Records   uint32
	Y, TextY  string
	BarY, W   string
	CountX    string
	Href      string // its records
}

// nsChart draws namespaces by record count.
type nsChart struct {
	Rows     []nsRow
	BarX     string
	Width    int
	Height   int
	More     int // namespaces not drawn
	MoreRecs uint32
}

// maxNamespaceBars is how many namespaces the chart draws; the rest are
// summed in one line.
const maxNamespaceBars = 20

// newNSChart draws the namespaces with the most records first (ties by
// name), at most maxNamespaceBars of them.
func newNSChart(ns []*hearthv1.NamespaceCount) nsChart {
	const barX, barMax, labelRunes = 260.0, 280.0, 34
	sorted := append([]*hearthv1.NamespaceCount(nil), ns...)
	sort.SliceStable(sorted, func(i, j int) bool {
		if sorted[i].GetRecords() != sorted[j].GetRecords() {
			return sorted[i].GetRecords() > sorted[j].GetRecords()
		}
		return sorted[i].GetNamespace() < sorted[j].GetNamespace()
	})
	ch := nsChart{BarX: num(barX), Width: chartWidth}
	if len(sorted) > maxNamespaceBars {
		for _, n := range sorted[maxNamespaceBars:] {
			ch.More++
			ch.MoreRecs += n.GetRecords()
		}
		sorted = sorted[:maxNamespaceBars]
	}
	most := uint32(1)
	for _, n := range sorted {
		most = max(most, n.GetRecords())
	}
	for i, n := range sorted {
		y := float64(i * rowHeight)
		w := barMax * float64(n.GetRecords()) / float64(most)
		ch.Rows = append(ch.Rows, nsRow{
			Namespace: n.GetNamespace(), Label: shorten(n.GetNamespace(), labelRunes), Records: n.GetRecords(),
			Y: num(y), TextY: num(y + 16), BarY: num(y + 4), W: num(w), CountX: num(barX + w + 8),
			Href: filter{NS: n.GetNamespace()}.href(),
		})
	}
	ch.Height = max(len(sorted)*rowHeight, rowHeight)
	return ch
}

// shorten cuts s to n runes, marking the cut with an ellipsis in the middle
// so both the kind (github/…) and the repository stay readable.
func shorten(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	head := (n - 1) / 2
	tail := n - 1 - head
	return string(r[:head]) + "…" + string(r[len(r)-tail:])
}

// hourBar is one hour of audit rows.
type hourBar struct {
	X, Y, W, H string
	Title      string
	N          int
}

// axisLabel is one label under the hour axis.
type axisLabel struct {
	X, Text string
	// End anchors the label's end at X: a label near the right edge
	// would otherwise run past it and be clipped.
	End bool
}

// axisLabelWidth is room enough for the widest hour label ("15:00").
const axisLabelWidth = 48

// hourChart draws audit rows per hour over the last hours.
type hourChart struct {
	Bars   []hourBar
	Labels []axisLabel
	Width  int
	Max    int
	Total  int
	Since  time.Time // start of the first hour drawn
	// Partial is set when the rows read did not reach back to Since: hours
	// before Oldest are undercounted.
	Partial bool
	Oldest  time.Time
}

// chartHours is how many hours the audit chart covers; hoursWidth is its
// width (it spans the page).
const (
	chartHours = 48
	hoursWidth = 1200
)

// newHourChart counts audit rows per local hour over the chartHours hours
// ending with the current one. complete says whether rows holds every audit
// row (the RPC returned fewer than asked); if not, and the oldest row read
// falls inside the window, the chart is marked partial.
func newHourChart(rows []*hearthv1.AuditEntry, now time.Time, complete bool) hourChart {
	const axisX, plotH, top = 40.0, 110.0, 8.0
	cur := time.Date(now.Year(), now.Month(), now.Day(), now.Hour(), 0, 0, 0, now.Location())
	since := cur.Add(-(chartHours - 1) * time.Hour)
	end := cur.Add(time.Hour)
	counts := make([]int, chartHours)
	ch := hourChart{Since: since, Width: hoursWidth}
	for _, e := range rows {
		at := e.GetAt().AsTime()
		if at.Before(since) || !at.Before(end) {
			continue
		}
		i := int(at.Sub(since) / time.Hour)
		if i >= 0 && i < chartHours {
			counts[i]++
			ch.Total++
		}
	}
	if !complete && len(rows) > 0 {
		oldest := rows[len(rows)-1].GetAt().AsTime()
		if !oldest.Before(since) {
			ch.Partial, ch.Oldest = true, oldest.In(now.Location())
		}
	}
	for _, n := range counts {
		ch.Max = max(ch.Max, n)
	}
	scale := 1.0
	if ch.Max > 0 {
		scale = plotH / float64(ch.Max)
	}
	slot := (hoursWidth - axisX) / chartHours
	for i, n := range counts {
		h := float64(n) * scale
		if n > 0 && h < 1 {
			h = 1
		}
		start := since.Add(time.Duration(i) * time.Hour)
		ch.Bars = append(ch.Bars, hourBar{
			X: num(axisX + float64(i)*slot + 1), W: num(slot - 2),
			Y: num(top + plotH - h), H: num(h), N: n,
			Title: fmt.Sprintf("%s: %d audit rows", start.Format("Mon 15:00"), n),
		})
		if start.Hour()%6 == 0 {
			label := start.Format("15:00")
			if start.Hour() == 0 {
				label = start.Format("Mon")
			}
			l := axisLabel{X: num(axisX + float64(i)*slot), Text: label}
			if x := axisX + float64(i)*slot; x+axisLabelWidth > hoursWidth {
				l.X, l.End = num(hoursWidth), true
			}
			ch.Labels = append(ch.Labels, l)
		}
	}
	return ch
}

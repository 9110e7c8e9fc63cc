package page

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
	"google.golang.org/protobuf/types/known/timestamppb"
)

func entry(at time.Time, action string) *hearthv1.AuditEntry {
	return &hearthv1.AuditEntry{At: timestamppb.New(at), Client: "codex", Action: action}
}

// TestNewHourChart buckets by local hour in a zone whose offset is not a
// whole hour, so that UTC truncation would put rows in the wrong bar.
func TestNewHourChart(t *testing.T) {
	t.Parallel()
	loc := time.FixedZone("IST", 5*3600+1800)
	now := time.Date(2026, 11, 30, 14, 20, 0, 0, loc)
	since := time.Date(2026, 11, 28, 15, 0, 0, 0, loc) // 47 hours before 14:00
	rows := []*hearthv1.AuditEntry{                    // newest first, as memory_audit returns them
		entry(now.Add(time.Hour), "store"),                        // future: not drawn
		entry(time.Date(2026, 11, 30, 14, 0, 0, 0, loc), "store"), // the current hour
		entry(time.Date(2026, 11, 30, 13, 59, 59, 0, loc), "store"),
		entry(time.Date(2026, 11, 30, 13, 30, 0, 0, loc), "update"),
		entry(since, "store"), // the first bar
		entry(since.Add(-time.Second), "store"),
	}
	t.Run("OK", func(t *testing.T) {
		ch := newHourChart(rows, now, true)
		if !ch.Since.Equal(since) {
			t.Errorf("Since = %v, want %v", ch.Since, since)
		}
		if len(ch.Bars) != chartHours {
			t.Fatalf("%d bars, want %d", len(ch.Bars), chartHours)
		}
		want := map[int]int{0: 1, 46: 2, 47: 1}
		for i, b := range ch.Bars {
			if b.N != want[i] {
				t.Errorf("bar %d (%s) = %d, want %d", i, b.Title, b.N, want[i])
			}
		}
		if ch.Total != 4 || ch.Max != 2 || ch.Partial {
			t.Errorf("Total %d Max %d Partial %v, want 4 2 false", ch.Total, ch.Max, ch.Partial)
		}
		// The tallest bar fills the plot; an empty one has no height.
		if h, _ := strconv.ParseFloat(ch.Bars[46].H, 64); h != 110 {
			t.Errorf("tallest bar height %v, want 110", h)
		}
		if ch.Bars[1].H != "0.0" {
			t.Errorf("empty bar height %s, want 0.0", ch.Bars[1].H)
		}
		for _, l := range ch.Labels {
			if l.Text != "18:00" && l.Text != "12:00" && l.Text != "06:00" && l.Text != "Sun" && l.Text != "Mon" {
				t.Errorf("label %q, want a 6-hour mark or a day name", l.Text)
			}
		}
	})
	// A label at the last hour ends at the chart's right edge instead of
	// running past it (issue 42): at 18:20 the last bar is 18:00's.
	t.Run("LastLabelInside", func(t *testing.T) {
		late := time.Date(2026, 11, 30, 18, 20, 0, 0, loc)
		ch := newHourChart(nil, late, true)
		last := ch.Labels[len(ch.Labels)-1]
		x, _ := strconv.ParseFloat(last.X, 64)
		if last.Text != "18:00" || !last.End || x > hoursWidth {
			t.Errorf("last label %+v: want 18:00 anchored at its end, inside %d", last, hoursWidth)
		}
		for _, l := range ch.Labels[:len(ch.Labels)-1] {
			if x, _ := strconv.ParseFloat(l.X, 64); l.End || x+axisLabelWidth > hoursWidth {
				t.Errorf("label %+v: want anchored at its start, with room", l)
			}
		}
	})
	t.Run("Partial", func(t *testing.T) {
		// Rows that stop inside the window while more exist: undercounted.
		ch := newHourChart(rows[:3], now, false)
		if !ch.Partial || !ch.Oldest.Equal(rows[2].GetAt().AsTime()) {
			t.Errorf("Partial %v Oldest %v, want true %v", ch.Partial, ch.Oldest, rows[2].GetAt().AsTime())
		}
		// Rows that reach past the window start cover it whole.
		if ch := newHourChart(rows, now, false); ch.Partial {
			t.Error("rows reaching before the window: Partial = true")
		}
	})
	t.Run("Empty", func(t *testing.T) {
		ch := newHourChart(nil, now, true)
		if ch.Total != 0 || ch.Max != 0 || len(ch.Bars) != chartHours {
			t.Errorf("got Total %d Max %d bars %d", ch.Total, ch.Max, len(ch.Bars))
		}
	})
}

func TestNewTypeChart(t *testing.T) {
	t.Parallel()
	counts := []*hearthv1.TypeStatusCount{
		{Type: "decision", Status: "superseded", Count: 5},
		{Type: "decision", Status: "active", Count: 15},
		{Type: "note", Status: "candidate", Count: 4},
		{Type: "note", Status: "archived", Count: 1}, // a status the page does not know
		{Type: "summary", Status: "active", Count: 0},
	}
	ch := newTypeChart(counts)
	if len(ch.Rows) != 2 || ch.Rows[0].Type != "decision" || ch.Rows[0].Total != 20 || ch.Rows[1].Total != 5 {
		t.Fatalf("rows %+v, want decision (20) then note (5)", ch.Rows)
	}
	d := ch.Rows[0].Segs
	if len(d) != 2 || d[0].Title != "decision active: 15" || d[1].Title != "decision superseded: 5" {
		t.Errorf("decision segments %+v, want active before superseded", d)
	}
	// Widths are proportional to counts; the biggest type fills the bar.
	w0, _ := strconv.ParseFloat(d[0].W, 64)
	w1, _ := strconv.ParseFloat(d[1].W, 64)
	if w0 != 322.5 || w1 != 107.5 {
		t.Errorf("widths %v %v, want 322.5 107.5 (430 split 3:1)", w0, w1)
	}
	var legend []string
	for _, l := range ch.Legend {
		legend = append(legend, l.Label)
	}
	if fmt.Sprint(legend) != "[active candidate superseded deleted archived]" {
		t.Errorf("legend %v", legend)
	}
	if ch := newTypeChart(nil); len(ch.Rows) != 0 {
		t.Errorf("no counts: %d rows", len(ch.Rows))
	}
}

func TestNewNSChart(t *testing.T) {
	t.Parallel()
	var ns []*hearthv1.NamespaceCount
	for i := 0; i < maxNamespaceBars+3; i++ {
		ns = append(ns, &hearthv1.NamespaceCount{Namespace: fmt.Sprintf("projects/p%02d", i), Records: uint32(i + 1)})
	}
	ch := newNSChart(ns)
	if len(ch.Rows) != maxNamespaceBars || ch.More != 3 || ch.MoreRecs != 1+2+3 {
		t.Fatalf("rows %d More %d MoreRecs %d, want %d 3 6", len(ch.Rows), ch.More, ch.MoreRecs, maxNamespaceBars)
	}
	if ch.Rows[0].Namespace != "projects/p22" || ch.Rows[0].Records != 23 || ch.Rows[0].W != "280.0" {
		t.Errorf("first row %+v, want the biggest namespace at full width", ch.Rows[0])
	}
}

func TestShorten(t *testing.T) {
	t.Parallel()
	long := "github/some-organisation/a-repository-with-a-very-long-name"
	got := shorten(long, 20)
	if len([]rune(got)) != 20 || got[:9] != "github/so" || got[len(got)-5:] != "-name" {
		t.Errorf("shorten = %q", got)
	}
	if shorten("global", 20) != "global" {
		t.Error("short name changed")
	}
}

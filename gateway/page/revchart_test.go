package page

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
	"google.golang.org/protobuf/types/known/timestamppb"
)

func historyEntry(at time.Time, action string, rev uint32) *hearthv1.HistoryEntry {
	return &hearthv1.HistoryEntry{At: timestamppb.New(at), Client: "codex", Action: action, Revision: rev}
}

func TestNewRevisionChart(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)
	t.Run("OK", func(t *testing.T) {
		// Newest first, as memory_history returns them; one row from before
		// revisions were kept.
		ch := newRevisionChart([]*hearthv1.HistoryEntry{
			historyEntry(t0.Add(10*time.Hour), "refuse.conflict", 3),
			historyEntry(t0.Add(10*time.Hour), "forget", 3),
			historyEntry(t0.Add(5*time.Hour), "update", 2),
			historyEntry(t0, "store", 1),
			historyEntry(t0.Add(-time.Hour), "store", 0),
		}, time.UTC)
		if len(ch.Points) != 4 || ch.Max != 3 {
			t.Fatalf("%d points, max %d; want 4 and 3", len(ch.Points), ch.Max)
		}
		x := func(i int) float64 { f, _ := strconv.ParseFloat(ch.Points[i].X, 64); return f }
		y := func(i int) float64 { f, _ := strconv.ParseFloat(ch.Points[i].Y, 64); return f }
		if x(0) != 40 || x(2) != 1180 || x(3) != 1180 || x(1) != 610 {
			t.Errorf("x %v %v %v %v: want time-proportional from 40 to 1180", x(0), x(1), x(2), x(3))
		}
		if y(0) != 90 || y(1) != 50 || y(2) != 10 || y(3) != 10 {
			t.Errorf("y %v %v %v %v: want revision 1 at the bottom, 3 at the top", y(0), y(1), y(2), y(3))
		}
		if ch.Points[0].Color != "#4fb89a" || ch.Points[3].Color != "#f0908a" || ch.Points[3].Title != "2026-11-01 19:00 UTC: codex refuse.conflict, revision 3" {
			t.Errorf("points %+v", ch.Points)
		}
		if want := "40.0,90.0 610.0,90.0 610.0,50.0 1180.0,50.0 1180.0,10.0 1180.0,10.0 1180.0,10.0"; ch.Line != want {
			t.Errorf("line %q, want %q (steps)", ch.Line, want)
		}
		var labels []string
		for _, l := range ch.Legend {
			labels = append(labels, l.Label)
		}
		if got := fmt.Sprint(labels); got != "[store update forget refusal]" {
			t.Errorf("legend %s", got)
		}
	})
	t.Run("OKOneInstant", func(t *testing.T) {
		ch := newRevisionChart([]*hearthv1.HistoryEntry{historyEntry(t0, "evidence", 2), historyEntry(t0, "store", 1), historyEntry(t0, "import", 1)}, time.UTC)
		if ch.Points[0].X != "40.0" || ch.Points[1].X != "610.0" || ch.Points[2].X != "1180.0" {
			t.Errorf("points at one instant: %+v, want spread evenly", ch.Points)
		}
		if got := ch.Legend[len(ch.Legend)-1]; got.Label != "import" || got.Color != otherColor {
			t.Errorf("an action without a colour: %+v", got)
		}
	})
	t.Run("OKNoRevisions", func(t *testing.T) {
		if ch := newRevisionChart([]*hearthv1.HistoryEntry{historyEntry(t0, "store", 0)}, time.UTC); len(ch.Points) != 0 {
			t.Errorf("points %+v for rows without revisions", ch.Points)
		}
	})
}

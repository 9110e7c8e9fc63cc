package page

import (
	"strings"
	"testing"
	"time"

	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"
)

func TestHandler_Anchors(t *testing.T) {
	t.Parallel()
	cfg := Config{AnchorSweepHours: 6}
	at := timestamppb.New(testNow.Add(-2 * time.Hour))
	t.Run("OK", func(t *testing.T) {
		a := baseAnswers()
		a.status.HomeAssistant = true
		a.status.LastSweep = &hearthv1.AnchorSweep{SweptAt: at, RequestedBy: "hearth", HomeAssistant: true,
			Checked: 40, Changed: 3, Available: 37, Unavailable: 3}
		a.status.NextSweepAt = timestamppb.New(testNow.Add(4 * time.Hour))
		a.status.FlaggedTotal = 23
		for i := range 20 {
			a.status.Flagged = append(a.status.Flagged, &hearthv1.FlaggedRecord{
				Id: "01JD3M5ZK9Q8W7E6R5T4Y3X2V1", Namespace: "topics/home-assistant", Type: "note", Status: "active",
				Title: "Garage <door>", Detail: "state unavailable", CheckedBy: "sweep",
				Unavailable: &hearthv1.AnchorFlag{Anchor: "entity:binary_sensor.garage_door", Since: at, Count: uint32(1 + i%2)},
			})
		}
		r, _ := render(t, a, cfg)
		wantContains(t, r.html,
			`id="sweep-state">last run 2026-11-30 12:20 UTC by hearth`,
			"checked 40 entity anchors, changed 3: 37 available, 3 unavailable, 0 unknown.",
			"every 6 h (anchor_sweep_hours); next 2026-11-30 18:20 UTC",
			"Garage &lt;door&gt;", "entity:binary_sensor.garage_door", "and 2 in all", "state unavailable",
			`id="flagged-total">23 flagged; 3 more not shown.`,
		)
		if n := strings.Count(r.html, `class="flagged-row"`); n != 20 {
			t.Errorf("%d flagged rows, want 20", n)
		}
		checkSelfContained(t, r.html)
	})
	t.Run("Unreachable", func(t *testing.T) {
		a := baseAnswers()
		a.status.HomeAssistant = true
		a.status.LastSweep = &hearthv1.AnchorSweep{SweptAt: at, RequestedBy: "claude-code", HomeAssistant: true, Unreachable: true,
			Detail: "Home Assistant unreachable: Home Assistant's API is not answering (HTTP 502)", Unavailable: 2}
		r, _ := render(t, a, cfg)
		wantContains(t, r.html, "by claude-code", "Home Assistant unreachable, nothing changed: ", "(HTTP 502)",
			`id="flagged-state">No record depends on something found unavailable.`)
	})
	t.Run("NoHomeAssistant", func(t *testing.T) {
		a := baseAnswers()
		a.status.LastSweep = &hearthv1.AnchorSweep{SweptAt: at, RequestedBy: "hearth", Unknown: 4}
		r, _ := render(t, a, cfg)
		wantContains(t, r.html, "Hearth runs outside Home Assistant: entity anchors are not checked (4 stay unknown).",
			"off: entity anchors are checked only inside Home Assistant")
		// No Home Assistant jargon outside it (issue 42).
		if strings.Contains(r.html, "SUPERVISOR_TOKEN") {
			t.Error("the page names SUPERVISOR_TOKEN outside Home Assistant")
		}
	})
	t.Run("ErrStatus", func(t *testing.T) {
		a := baseAnswers()
		a.errs["Status"] = status.Error(codes.Unavailable, "down")
		r, _ := render(t, a, cfg)
		wantContains(t, r.html, `id="sweep-state">unknown`, "memory_status failed: Unavailable: down")
		if strings.Contains(r.html, `class="flagged-row"`) {
			t.Error("flagged rows without a status")
		}
	})
}

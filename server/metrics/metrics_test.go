package metrics_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"google.golang.org/grpc/codes"

	"github.com/hearth-memory/hearth/server/metrics"
)

func TestMetrics_Text(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	gauges := metrics.Gauges{
		Records: []metrics.Count{{Labels: [2]string{"decision", "active"}, N: 3}, {Labels: [2]string{"gossip", "active"}, N: 2},
			{Labels: [2]string{"rumour", "active"}, N: 1}},
		Jobs:       []metrics.Count{{Labels: [2]string{"extraction", "queued"}, N: 4}, {Labels: [2]string{"Free Text!", "queued"}, N: 5}},
		LastBackup: now.Add(-90 * time.Second),
		ModelServers: []metrics.ModelServer{{Tier: "primary", Live: true, CallsToday: 12, TokensToday: 3400, Calls: 40, Tokens: 9000, Spent: true},
			{Tier: "http://10.0.0.9:11434", Live: false}},
		ModelsPaused: new(true),
		Extractions:  map[string]int{"kept": 4, "unparsable": 2, "<script>": 9},
		Encoder:      &metrics.Encoder{Live: false, Counted: true, Current: 7, Stale: 2, Missing: 1},
		Writer: &metrics.Writer{Waiting: 3, Commits: 10, Writes: 41, WALBytes: 4096 * 12, Truncate: 5, TruncateUnfinished: 2,
			Background: 7, BackgroundFailed: 1, CatchUp: 6, CatchUpFailed: 0, Restarts: 4},
	}
	var fail error
	m := metrics.New(metrics.Config{
		Tools: map[string]string{"/x.S/Store": "memory_store"}, Types: []string{"decision"},
		Statuses: []string{"active"}, States: []string{"queued"}, Tiers: []string{"primary", "fallback", "direct"},
		Outcomes: []string{"kept", "unparsable", "failed"},
		Gauges:   func(context.Context) (metrics.Gauges, error) { return gauges, fail },
		Now:      func() time.Time { return now },
	})
	m.Observe("/x.S/Store", codes.OK, 3*time.Millisecond)
	m.Observe("/x.S/Unknown", codes.Code(99), time.Second)

	t.Run("OK", func(t *testing.T) {
		text, err := m.Text()
		if err != nil {
			t.Fatal(err)
		}
		p := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := p.TextToMetricFamilies(strings.NewReader(text))
		if err != nil {
			t.Fatalf("parse: %v", err)
		}
		for _, want := range []string{
			`hearth_calls_total{code="OK",tool="memory_store"} 1`,
			`hearth_calls_total{code="UNKNOWN",tool="other"} 1`,
			`hearth_records{status="active",type="decision"} 3`,
			`hearth_records{status="active",type="other"} 3`, // two unknown types, summed
			`hearth_jobs{kind="extraction",state="queued"} 4`,
			`hearth_jobs{kind="other",state="queued"} 5`,
			`hearth_last_backup_age_seconds 90`,
			`hearth_call_duration_seconds_bucket{tool="memory_store",le="0.005"} 1`,
			`hearth_model_server_up{position="0",tier="primary"} 1`,
			`hearth_model_server_up{position="1",tier="other"} 0`, // a tier outside the set
			`hearth_model_calls_today{position="0",tier="primary"} 12`,
			`hearth_model_tokens_today{position="0",tier="primary"} 3400`,
			`hearth_model_budget_spent{position="0",tier="primary"} 1`,
			`hearth_model_budget_spent{position="1",tier="other"} 0`,
			`hearth_model_calls_total{position="0",tier="primary"} 40`,
			`hearth_model_tokens_total{position="0",tier="primary"} 9000`,
			`hearth_model_calls_paused 1`,
			`hearth_extraction_receipts{outcome="kept"} 4`,
			`hearth_extraction_receipts{outcome="unparsable"} 2`,
			`hearth_extraction_receipts{outcome="failed"} 0`,
			`hearth_encoder_up 0`,
			`hearth_record_vectors{state="current"} 7`,
			`hearth_record_vectors{state="stale"} 2`,
			`hearth_record_vectors{state="missing"} 1`,
			`hearth_writes_waiting 3`,
			`hearth_write_commits_total 10`,
			`hearth_writes_committed_total 41`,
			`hearth_wal_bytes 49152`,
			`hearth_wal_checkpoints_total{checkpoint="truncate",result="done"} 3`,
			`hearth_wal_checkpoints_total{checkpoint="truncate",result="unfinished"} 2`,
			`hearth_wal_checkpoints_total{checkpoint="background",result="done"} 6`,
			`hearth_wal_checkpoints_total{checkpoint="background",result="failed"} 1`,
			`hearth_wal_checkpoints_total{checkpoint="catch-up",result="done"} 6`,
			`hearth_wal_checkpoints_total{checkpoint="catch-up",result="failed"} 0`,
			`hearth_wal_restarts_total 4`,
		} {
			if !strings.Contains(text, want) {
				t.Errorf("metrics lack %s", want)
			}
		}
		if strings.Contains(text, "gossip") || strings.Contains(text, "Free Text") || strings.Contains(text, "<script>") || strings.Contains(text, "10.0.0.9") {
			t.Errorf("a value outside the closed sets became a label:\n%s", text)
		}
		if fams["hearth_last_backup_timestamp_seconds"].GetMetric()[0].GetGauge().GetValue() != float64(now.Add(-90*time.Second).Unix()) {
			t.Errorf("backup timestamp wrong")
		}
	})
	t.Run("OKNotCounted", func(t *testing.T) {
		// Before the vector index has loaded the counts are unknown: the
		// encoder's gauge stays, the vectors' series are left out.
		gauges.Encoder = &metrics.Encoder{Live: true}
		defer func() {
			gauges.Encoder = &metrics.Encoder{Live: false, Counted: true, Current: 7, Stale: 2, Missing: 1}
		}()
		text, err := m.Text()
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(text, "hearth_encoder_up 1") || strings.Contains(text, "hearth_record_vectors{") {
			t.Errorf("an index that cannot count: want hearth_encoder_up 1 and no hearth_record_vectors series:\n%s", text)
		}
	})
	t.Run("ErrStore", func(t *testing.T) {
		fail = errors.New("store down")
		defer func() { fail = nil }()
		text, err := m.Text()
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(text, "hearth_records{") || !strings.Contains(text, "hearth_store_scrape_errors_total 1") {
			t.Errorf("a failed store read: want no store gauges and the error counted:\n%s", text)
		}
	})
}

func TestCodeName(t *testing.T) {
	t.Parallel()
	for c, want := range map[codes.Code]string{codes.OK: "OK", codes.Canceled: "CANCELLED", codes.Unauthenticated: "UNAUTHENTICATED", 17: "UNKNOWN"} {
		if got := metrics.CodeName(c); got != want {
			t.Errorf("CodeName(%d) = %q, want %q", c, got, want)
		}
	}
}

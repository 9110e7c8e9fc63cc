package options

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestDoc_Ranges holds docs/options.md to the limits Validate enforces: the
// page states each range from the constants here.
func TestDoc_Ranges(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../docs/options.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.Join(strings.Fields(string(b)), " ")
	for _, want := range []string{
		fmt.Sprintf("candidate_expiry_days 0–%d (0 = off)", maxDays),
		fmt.Sprintf("retention_deleted_days 1–%d", maxDays),
		fmt.Sprintf("audit_retention_days 0–%d (0 = keep forever)", maxDays),
		fmt.Sprintf("anchor_sweep_hours %d–%d", minAnchorSweepHours, maxAnchorSweepHours),
		fmt.Sprintf("hard_context_limit_tokens %d–%d", minContextTokens, maxHardContextTokens),
		fmt.Sprintf("context_budget_tokens %d up to hard_context_limit_tokens", minContextTokens),
		fmt.Sprintf("ollama_timeout_s %d–%d", minOllamaTimeoutS, maxOllamaTimeoutS),
		fmt.Sprintf("embed_timeout_s %g–%g", minEmbedTimeout.Seconds(), maxEmbedTimeout.Seconds()),
		fmt.Sprintf("rerank_timeout_s %g–%g", minEmbedTimeout.Seconds(), maxEmbedTimeout.Seconds()),
		fmt.Sprintf("Model names are 1–%d bytes", maxModelNameLen),
		fmt.Sprintf("model_daily_calls 0–%d (0 = no cap)", maxModelDailyCalls),
		fmt.Sprintf("model_daily_tokens 0–%d (0 = no cap)", maxModelDailyTokens),
	} {
		if !strings.Contains(doc, want) {
			t.Errorf("docs/options.md does not say %q", want)
		}
	}
}

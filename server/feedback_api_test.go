package server_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hearth-memory/hearth/server/servertest"
)

// TestSearch_FeedbackThroughTransports: memory_search re-ranks a question's
// hits by the words its best hits share (storage/fulltext/feedback.go): a
// record about what the best hits are about comes before a short one that
// bm25 alone ranks higher, through every transport, and every hit returned
// shows its snippet.
func TestSearch_FeedbackThroughTransports(t *testing.T) {
	t.Parallel()
	td := servertest.Start(t, testOptions())
	tok := td.Tokens["claude-code"]
	for _, tr := range td.Transports() {
		t.Run(tr.Name(), func(t *testing.T) {
			ns := "github/acme/feedback-" + tr.Name()
			store := func(title, content string) string {
				t.Helper()
				r := tr.Call(t, tok, "memory_store", storeArgs(ns, title, content))
				if !r.OK {
					t.Fatalf("store: %v", r)
				}
				return str(r.Body, "record", "id")
			}
			for i := range 6 {
				store("Lunch", fmt.Sprintf("Pizza on Fridays at the office, table %c", 'a'+i))
			}
			store("Webhook retries", "Webhook retries back off; after the last one the event goes to the dead letter queue.")
			store("Webhook retries drained", "Retries of a webhook end in the dead letter queue, which the on-call drains.")
			dlq := store("Dead letter queue", "Events in the dead letter queue are replayed by hand once the outage is over; a webhook is one source.")
			short := store("Client policy", "Client retries: three.")
			se := tr.Call(t, tok, "memory_search", map[string]any{"namespace": ns, "query": "what happens to webhook retries"})
			if !se.OK {
				t.Fatalf("search: %v", se)
			}
			pos := map[string]int{}
			for i := range list(se.Body, "hits") {
				pos[str(se.Body, "hits", i, "id")] = i + 1
				if sn := strings.ToLower(str(se.Body, "hits", i, "snippet")); !strings.Contains(sn, "webhook") && !strings.Contains(sn, "retries") {
					t.Errorf("hit %d: snippet %q shows no word of the query", i, sn)
				}
			}
			if pos[dlq] == 0 || pos[short] == 0 || pos[dlq] > pos[short] {
				t.Errorf("the dead letter record at %d, the short one at %d: want the dead letter record first (%s)", pos[dlq], pos[short], se.Raw)
			}
		})
	}
}

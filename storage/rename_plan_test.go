package storage

import (
	"context"
	"strings"
	"testing"
)

// TestRename_Plan: a rename's range over namespaces is searched in an
// index that leads with the namespace, records_namespace_status_timeline_idx
// since migration 0088 dropped records_namespace_created_at_idx, never by a
// scan of the table.
func TestRename_Plan(t *testing.T) {
	t.Parallel()
	db := openTestDB(t)
	plan, err := db.queryPlan(context.Background(), renameSQL("records", "namespace", true),
		"github/new/", 12, "github/old/", "github/old0", int64(0))
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(plan, "; ")
	if !strings.Contains(got, "INDEX records_namespace_status_timeline_idx (namespace>? AND namespace<?)") {
		t.Errorf("rename plan: %s; want a search of records_namespace_status_timeline_idx by namespace range", got)
	}
}

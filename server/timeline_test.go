package server

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/hearth-memory/hearth/gateway"
	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
	"github.com/hearth-memory/hearth/server/budget"
	"github.com/hearth-memory/hearth/server/options"
	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/storagetest"
)

// TestTimeline_AsWholePage: memory_timeline, which reads its page a batch at
// a time as the budget takes the records, replies exactly what packing the
// whole page replied: the same records, estimated_tokens, truncated and
// left_out, for pages of short and long records, limits below, at and
// above a batch, and filters.
func TestTimeline_AsWholePage(t *testing.T) {
	ctx := context.Background()
	db := storagetest.Open(t)
	srv, err := New(db, Config{Marshal: gateway.MarshalResult, Options: options.Default()})
	if err != nil {
		t.Fatal(err)
	}
	m := &memoryService{Server: srv}
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 60 {
		ns := []string{"global", "github/acme/api", "github/acme/web"}[r.IntN(3)]
		content := strings.Repeat(fmt.Sprintf("word%d ", i), 1+r.IntN([]int{10, 60, 400}[r.IntN(3)]))
		storagetest.Store(t, db, storage.NewRecord{Namespace: ns, Type: storage.Types[r.IntN(len(storage.Types))],
			Title: storagetest.Text(t, fmt.Sprintf("record %d", i)), Content: storagetest.Text(t, content),
			Status: storage.StatusActive})
	}
	for _, limit := range []uint32{0, 1, 5, 9, 10, 11, 20, 37, 100} {
		for _, req := range []*hearthv1.TimelineRequest{
			{Namespace: "github/acme/api"},
			{Within: withinAll},
			{Within: withinAll, Types: []string{storage.TypeNote, storage.TypeDecision}},
		} {
			req := proto.CloneOf(req)
			req.Limit = limit
			got, err := m.Timeline(ctx, req)
			if err != nil {
				t.Fatalf("%v: %v", req, err)
			}
			// The whole page, packed at once.
			scopes, err := m.timelineScopes(req)
			if err != nil {
				t.Fatal(err)
			}
			q := storage.TimelineQuery{Namespaces: scopes, Types: req.GetTypes(), Limit: int(limit)}
			if limit == 0 {
				q.Limit = defaultTimeline
			}
			recs, err := db.Timeline(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			want := &hearthv1.TimelineResponse{}
			if _, err := budget.Fit(srv.size, want, want.SetRecords, recordsToProto(recs), budget.Records, true); err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(got, want) {
				t.Errorf("%v: %d records, left_out %d, %d tokens; the whole page packed: %d, %d, %d", req,
					len(got.GetRecords()), got.GetLeftOut(), got.GetEstimatedTokens(),
					len(want.GetRecords()), want.GetLeftOut(), want.GetEstimatedTokens())
			}
		}
	}
}

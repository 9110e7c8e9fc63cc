package storage_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ncruces/go-sqlite3/driver"
	"github.com/ncruces/go-sqlite3/ext/fts5"

	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/storagetest"
	"github.com/hearth-memory/hearth/storage/testwait"
)

// recordAsks records the asks and applies them.
func recordAsks(tb testing.TB, db *storage.DB, asks ...storage.Ask) {
	tb.Helper()
	for _, a := range asks {
		db.RecordAsk(a)
	}
	if err := db.FlushAsks(ctx); err != nil {
		tb.Fatal(err)
	}
}

func use(tb testing.TB, db *storage.DB, client, session string, ids ...string) {
	tb.Helper()
	db.RecordUse(storage.AskUse{Client: client, Session: session, IDs: ids})
	if err := db.FlushAsks(ctx); err != nil {
		tb.Fatal(err)
	}
}

func ask(tb testing.TB, ns, client, session, query string, hits ...string) storage.Ask {
	return storage.Ask{Namespace: ns, Client: client, Session: session, Query: text(tb, query), Hits: hits}
}

func questionsOf(tb testing.TB, db *storage.DB, ns ...string) []*storage.Question {
	tb.Helper()
	qs, err := db.Questions(ctx, storage.QuestionsQuery{Namespaces: ns, Limit: 50})
	if err != nil {
		tb.Fatal(err)
	}
	return qs
}

func TestDB_RecordAsk(t *testing.T) {
	t.Parallel()
	const ns = "github/acme/api"
	t.Run("OKGroupsAndCounts", func(t *testing.T) {
		db := storagetest.Open(t)
		recordAsks(t, db,
			ask(t, ns, "claude-code", "s1", "How do we run the migrations?", "A1", "A2"),
			ask(t, ns, "claude-code", "s1", "running migrations", "A1"),
			ask(t, ns, "codex", "s2", "Migrations: how to run them"),
			ask(t, ns, "codex", "s3", "Which Python version does CI use?", "B1"),
			ask(t, "github/acme/web", "codex", "s3", "run migrations", "C1"),
		)
		qs := questionsOf(t, db, ns)
		if len(qs) != 2 {
			t.Fatalf("got %d questions, want 2", len(qs))
		}
		q := qs[0]
		if q.Text != "How do we run the migrations?" || q.Asks != 3 || q.Sessions != 2 || q.Clients != 2 || q.Used != 0 {
			t.Errorf("got %q asks %d sessions %d clients %d used %d; want the first wording, 3, 2, 2, 0", q.Text, q.Asks, q.Sessions, q.Clients, q.Used)
		}
		if q.Demand != 2 || q.AnswerState() != storage.AnswerUnanswered || q.LastAskedAt.IsZero() {
			t.Errorf("demand %v state %s last asked %v; want 2, unanswered, set", q.Demand, q.AnswerState(), q.LastAskedAt)
		}
		if all := questionsOf(t, db); len(all) != 3 {
			t.Errorf("every namespace: %d questions, want 3", len(all))
		}
	})

	t.Run("OKStopWordsOnlyNotRecorded", func(t *testing.T) {
		db := storagetest.Open(t)
		recordAsks(t, db, ask(t, ns, "claude-code", "s1", "what is it?"))
		if qs := questionsOf(t, db); len(qs) != 0 {
			t.Errorf("got %d questions, want none", len(qs))
		}
	})

	t.Run("OKUsedOnlyInTheSameSession", func(t *testing.T) {
		db := storagetest.Open(t)
		recordAsks(t, db,
			ask(t, ns, "claude-code", "s1", "retry policy for webhooks", "R1", "R2"),
			ask(t, ns, "claude-code", "s2", "webhooks retry policy", "R1"),
			ask(t, ns, "codex", "s1", "webhook retries policy", "R2"),
		)
		use(t, db, "claude-code", "s1", "R2")       // marks the first ask
		use(t, db, "claude-code", "s2", "X9")       // not a hit of s2's ask
		use(t, db, "claude-code", "s3", "R1", "R2") // another session
		q := questionsOf(t, db, ns)[0]
		if q.Asks != 3 || q.Used != 1 {
			t.Fatalf("asks %d used %d, want 3 and 1", q.Asks, q.Used)
		}
		use(t, db, "claude-code", "s1", "R1") // already used: counted once
		if q := questionsOf(t, db, ns)[0]; q.Used != 1 {
			t.Errorf("used %d after a second get, want 1", q.Used)
		}
	})

	t.Run("OKCloseFlushes", func(t *testing.T) {
		path := storagetest.Place(t)
		db := storagetest.OpenPath(t, path)
		db.RecordAsk(ask(t, ns, "claude-code", "s1", "where do the logs go", "L1"))
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		db2 := storagetest.OpenPath(t, path)
		if qs := questionsOf(t, db2); len(qs) != 1 || qs[0].Asks != 1 {
			t.Errorf("after close and open: %d questions, want 1 with 1 ask", len(qs))
		}
		db.RecordAsk(ask(t, ns, "claude-code", "s1", "after close"))
		if st := db.AskStats(); st.Dropped != 1 {
			t.Errorf("dropped %d after close, want 1", st.Dropped)
		}
	})

	t.Run("OKFlushesByItself", func(t *testing.T) {
		db := storagetest.Open(t)
		db.RecordAsk(ask(t, ns, "claude-code", "s1", "where do the logs go", "L1"))
		testwait.WaitFor(t, "the timer's flush writes the ask", func() bool { return len(questionsOf(t, db)) > 0 })
	})
}

// TestDemand holds the documented formula (docs/design.md R-W2) on constructed
// histories, as stored and as storage.Demand computes it.
func TestDemand(t *testing.T) {
	t.Parallel()
	const ns = "global"
	cases := []struct {
		name string
		// each ask: session, whether its hit was then used
		asks []struct {
			session string
			used    bool
		}
		want float64
	}{
		// One client: its sessions weigh 1, 1/2, 1/4, …
		{name: "AskedOftenNeverUsed", want: 1 + 0.5 + 0.25 + 0.125 + 0.0625},
		{name: "WellAnswered", want: 0},
		{name: "HalfUsed", want: (1 + 0.5 + 0.25 + 0.125) * 0.5},
		{name: "OneSessionManyAsks", want: 1},
	}
	type a = struct {
		session string
		used    bool
	}
	for i := range 5 {
		s := "s" + string(rune('0'+i))
		cases[0].asks = append(cases[0].asks, a{s, false})
		cases[1].asks = append(cases[1].asks, a{s, true})
	}
	cases[2].asks = []a{{"s1", true}, {"s1", false}, {"s2", true}, {"s2", false}, {"s3", false}, {"s4", true}, {"s4", false}, {"s3", true}}
	for range 6 {
		cases[3].asks = append(cases[3].asks, a{"only", false})
	}
	for _, tc := range cases {
		t.Run("OK"+tc.name, func(t *testing.T) {
			db := storagetest.Open(t)
			used := 0
			for i, x := range tc.asks {
				hit := "H" + string(rune('A'+i))
				recordAsks(t, db, ask(t, ns, "claude-code", x.session, "where are the build logs kept", hit))
				if x.used {
					used++
					use(t, db, "claude-code", x.session, hit)
				}
			}
			q := questionsOf(t, db)[0]
			sessions := map[string]bool{}
			for _, x := range tc.asks {
				sessions[x.session] = true
			}
			if q.Asks != len(tc.asks) || q.Used != used || q.Sessions != len(sessions) {
				t.Fatalf("asks %d used %d sessions %d, want %d %d %d", q.Asks, q.Used, q.Sessions, len(tc.asks), used, len(sessions))
			}
			formula := storage.Demand(q.Asks, q.Used, storage.SessionWeight(len(sessions)))
			if math.Abs(q.Demand-tc.want) > 1e-9 || math.Abs(formula-tc.want) > 1e-9 {
				t.Errorf("demand %v (formula %v), want %v", q.Demand, formula, tc.want)
			}
		})
	}

	t.Run("OKRanksByDemand", func(t *testing.T) {
		db := storagetest.Open(t)
		for _, s := range []string{"s1", "s2", "s3"} {
			recordAsks(t, db, ask(t, ns, "codex", s, "which port does the exporter use", "P1"))
			recordAsks(t, db, ask(t, ns, "codex", s, "how are tokens rotated", "T1"))
			use(t, db, "codex", s, "T1")
		}
		recordAsks(t, db, ask(t, ns, "codex", "s9", "where is the changelog", "C1"))
		var got []string
		for _, q := range questionsOf(t, db) {
			got = append(got, q.Text)
		}
		want := []string{"which port does the exporter use", "where is the changelog", "how are tokens rotated"}
		if !slices.Equal(got, want) {
			t.Errorf("order %q, want %q", got, want)
		}
	})
}

// TestDemand_ByClient holds issue 41's tenth finding: one client naming
// 30 invented sessions cannot outrank a question two other clients asked
// once each, the weight the table keeps is the formula's, and it stays so
// as asks are purged one by one.
func TestDemand_ByClient(t *testing.T) {
	t.Parallel()
	const ns = "global"
	db := storagetest.Open(t)
	clk := newClock(db, time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	for i := range 30 {
		if i == 25 {
			clk.Add(20 * 24 * time.Hour) // the first 25 go with the purge below
		}
		recordAsks(t, db, ask(t, ns, "lan-reader", fmt.Sprintf("invented-%d", i), "which port does the exporter use", "P1"))
	}
	recordAsks(t, db,
		ask(t, ns, "claude-code", "s1", "where is the changelog", "C1"),
		ask(t, ns, "codex", "s2", "where is the changelog", "C1"),
	)
	qs := questionsOf(t, db)
	if len(qs) != 2 || qs[0].Text != "where is the changelog" {
		t.Fatalf("top question %q (demand %v), want the one two clients asked", qs[0].Text, qs[0].Demand)
	}
	gamed := qs[1]
	if gamed.Sessions != 30 || gamed.Clients != 1 {
		t.Errorf("sessions %d clients %d, want 30 and 1", gamed.Sessions, gamed.Clients)
	}
	if want := storage.SessionWeight(30); gamed.Weight != want || gamed.Demand != want || want >= 2 {
		t.Errorf("weight %v demand %v, want %v (under 2)", gamed.Weight, gamed.Demand, want)
	}
	if qs[0].Weight != 2 || qs[0].Demand != 2 {
		t.Errorf("two clients once each: weight %v demand %v, want 2", qs[0].Weight, qs[0].Demand)
	}
	// Within one client, more sessions still rank higher.
	for i := range 3 {
		recordAsks(t, db, ask(t, ns, "lan-reader", fmt.Sprintf("other-%d", i), "how are tokens rotated", "T1"))
	}
	if got := questionsOf(t, db); got[1].Text != "which port does the exporter use" || got[2].Text != "how are tokens rotated" {
		t.Errorf("order %q, %q; want the question of 30 sessions above the one of 3", got[1].Text, got[2].Text)
	}
	// The purge takes 25 of the 30 sessions: the weight is the 5 left's.
	clk.Add(15 * 24 * time.Hour)
	if _, err := db.Maintain(ctx, storage.Maintenance{Retention: 30 * 24 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	for _, q := range questionsOf(t, db) {
		if q.Text == "which port does the exporter use" && (q.Sessions != 5 || q.Weight != storage.SessionWeight(5)) {
			t.Errorf("after the purge: sessions %d weight %v, want 5 and %v", q.Sessions, q.Weight, storage.SessionWeight(5))
		}
	}
}

func TestDB_DeclareQuestion(t *testing.T) {
	t.Parallel()
	db := storagetest.Open(t)
	t.Run("OK", func(t *testing.T) {
		q, err := db.DeclareQuestion(ctx, "global", text(t, "How do we rotate tokens?"), "claude-code")
		if err != nil || !q.Declared || q.Asks != 0 || q.ID == "" {
			t.Fatalf("got %+v, %v; want a declared question", q, err)
		}
		again, err := db.DeclareQuestion(ctx, "global", text(t, "rotating tokens"), "codex")
		if err != nil || again.ID != q.ID || again.Text != "How do we rotate tokens?" {
			t.Errorf("second declaration: %+v, %v; want the same question, first wording", again, err)
		}
		log, err := db.AuditLog(ctx, 10)
		if err != nil || len(log) != 2 || log[0].Action != storage.ActionQuestionAdd || log[0].RecordID != q.ID {
			t.Errorf("audit %+v, %v; want two question-add rows naming %s", log, err, q.ID)
		}
		found, err := db.FindQuestion(ctx, []string{"github/acme/api", "global"}, "token expiry?")
		if storage.ErrorCode(err) != storage.NotFound {
			t.Errorf("another question: %+v, %v; want NotFound", found, err)
		}
		found, err = db.FindQuestion(ctx, []string{"github/acme/api", "global"}, "token rotation: how?")
		if err != nil || found.ID != q.ID {
			t.Errorf("FindQuestion: %+v, %v; want %s", found, err, q.ID)
		}
	})
	t.Run("ErrNoWords", func(t *testing.T) {
		if _, err := db.DeclareQuestion(ctx, "global", text(t, "how is it?"), "codex"); storage.ErrorCode(err) != storage.Invalid {
			t.Errorf("got %v, want Invalid", err)
		}
	})
}

// storeAnswer stores na through a job, as the worker does.
func storeAnswer(tb testing.TB, db *storage.DB, na storage.NewAnswer) {
	tb.Helper()
	if _, _, err := db.EnqueueJob(ctx, storage.NewJob{Kind: "answer-test"}); err != nil {
		tb.Fatal(err)
	}
	job, err := db.LeaseJob(ctx, "test", []string{"answer-test"}, time.Minute)
	if err != nil || job == nil {
		tb.Fatalf("lease: %v, %v", job, err)
	}
	if err := db.CompleteJob(ctx, job, func(ctx context.Context, tx *storage.JobTx) error {
		return tx.StoreAnswer(ctx, job.ID, na)
	}); err != nil {
		tb.Fatal(err)
	}
}

func TestTx_StoreAnswer(t *testing.T) {
	t.Parallel()
	db := storagetest.Open(t)
	r1 := storagetest.Store(t, db, rec(t, "global", "Migrations", "Run make migrate before deploying."))
	r2 := storagetest.Store(t, db, rec(t, "global", "Migrations in CI", "CI runs migrations on a scratch database."))
	q, err := db.DeclareQuestion(ctx, "global", text(t, "How do we run the migrations?"), "codex")
	if err != nil {
		t.Fatal(err)
	}
	na := storage.NewAnswer{
		QuestionID: q.ID, Kind: storage.AnswerModel, Model: "qwen",
		Sentences: []storage.NewSentence{
			{Text: text(t, "Run make migrate before deploying."), SourceIDs: []string{r1.ID}},
			{Text: text(t, "CI runs them on a scratch database."), SourceIDs: []string{r2.ID, r1.ID}},
		},
		Basis: storage.Basis([]string{r1.ID, r2.ID}, []storage.BasisRecord{storage.BasisOf(r2), storage.BasisOf(r1)}),
	}
	storeAnswer(t, db, na)

	t.Run("OKFresh", func(t *testing.T) {
		got, err := db.Question(ctx, q.ID)
		if err != nil {
			t.Fatal(err)
		}
		a := got.Answer
		if a == nil || a.Stale || got.AnswerState() != storage.AnswerFresh {
			t.Fatalf("answer %+v, want fresh", a)
		}
		if a.Text != "Run make migrate before deploying. CI runs them on a scratch database." ||
			!slices.Equal(a.SourceIDs, []string{r1.ID, r2.ID}) || a.Kind != storage.AnswerModel || a.Model != "qwen" {
			t.Errorf("answer %+v", a)
		}
	})

	t.Run("OKStaleOnEditAndGone", func(t *testing.T) {
		if _, err := db.Update(ctx, r2.ID, r2.Revision, storage.Changes{Content: textp(t, "CI no longer runs migrations.")}, "codex"); err != nil {
			t.Fatal(err)
		}
		got, err := db.Question(ctx, q.ID)
		if err != nil || got.AnswerState() != storage.AnswerStale {
			t.Fatalf("after an edit of a source: %v, %v; want stale", got.AnswerState(), err)
		}
		// Answered again from the record as it is: fresh again.
		r2 = get(t, db, r2.ID)
		na.Basis = storage.Basis([]string{r1.ID, r2.ID}, []storage.BasisRecord{storage.BasisOf(r1), storage.BasisOf(r2)})
		storeAnswer(t, db, na)
		if got, _ := db.Question(ctx, q.ID); got.AnswerState() != storage.AnswerFresh {
			t.Errorf("after a refresh: %s, want fresh", got.AnswerState())
		}
		if _, err := db.Forget(ctx, r1.ID, 0, text(t, "gone"), "codex"); err != nil {
			t.Fatal(err)
		}
		if got, _ := db.Question(ctx, q.ID); got.AnswerState() != storage.AnswerStale {
			t.Errorf("after a source was forgotten: %s, want stale", got.AnswerState())
		}
	})

	t.Run("OKNone", func(t *testing.T) {
		q2, _ := db.DeclareQuestion(ctx, "global", text(t, "Who owns the billing service?"), "codex")
		storeAnswer(t, db, storage.NewAnswer{QuestionID: q2.ID, Kind: storage.AnswerNone, Basis: storage.Basis(nil, nil)})
		got, _ := db.Question(ctx, q2.ID)
		if got.Answer == nil || got.Answer.Text != storage.NoAnswer || len(got.Answer.SourceIDs) != 0 || got.Answer.Stale {
			t.Errorf("answer %+v, want %q, fresh, no sources", got.Answer, storage.NoAnswer)
		}
	})

	t.Run("ErrInvalid", func(t *testing.T) {
		for _, bad := range []storage.NewAnswer{
			{QuestionID: q.ID, Kind: storage.AnswerModel},
			{QuestionID: q.ID, Kind: "guess", Sentences: na.Sentences},
			{QuestionID: q.ID, Kind: storage.AnswerExtractive, Sentences: []storage.NewSentence{{Text: text(t, "Uncited.")}}},
			{QuestionID: q.ID, Kind: storage.AnswerNone, Sentences: na.Sentences},
		} {
			job, _, _ := db.EnqueueJob(ctx, storage.NewJob{Kind: "answer-bad"})
			job, _ = db.LeaseJob(ctx, "test", []string{"answer-bad"}, time.Minute)
			err := db.CompleteJob(ctx, job, func(ctx context.Context, tx *storage.JobTx) error { return tx.StoreAnswer(ctx, job.ID, bad) })
			if storage.ErrorCode(err) != storage.Invalid {
				t.Errorf("%+v: got %v, want Invalid", bad, err)
			}
		}
	})
}

func TestDB_QueueAnswer(t *testing.T) {
	t.Parallel()
	const ns = "global"
	refresh := storage.AnswerRefresh{MinSessions: 2, MaxAge: 24 * time.Hour}
	db := storagetest.Open(t)
	clk := newClock(db, time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))

	if job, err := db.QueueAnswer(ctx, refresh); err != nil || job != nil {
		t.Fatalf("empty store: %v, %v; want nothing", job, err)
	}
	recordAsks(t, db, ask(t, ns, "codex", "s1", "where is the changelog", "C1")) // one session: not yet
	for _, s := range []string{"s1", "s2", "s3"} {
		recordAsks(t, db, ask(t, ns, "codex", s, "which port does the exporter use", "P1"))
	}
	for _, s := range []string{"s1", "s2"} {
		recordAsks(t, db, ask(t, ns, "codex", s, "how are tokens rotated", "T1"))
	}
	declared, _ := db.DeclareQuestion(ctx, ns, text(t, "who owns billing"), "codex")
	qs := questionsOf(t, db)
	port, tokens := qs[0], qs[1]

	var order []string
	for range 4 {
		job, err := db.QueueAnswer(ctx, refresh)
		if err != nil {
			t.Fatal(err)
		}
		if job == nil {
			break
		}
		if again, _ := db.QueueAnswer(ctx, refresh); again != nil {
			t.Fatalf("a second job while %s waits", job.ID)
		}
		leased, _ := db.LeaseJob(ctx, "test", []string{storage.KindAnswer}, time.Minute)
		var p struct {
			QuestionID string `json:"question_id"`
		}
		if err := json.Unmarshal([]byte(leased.Payload), &p); err != nil {
			t.Fatal(err)
		}
		order = append(order, p.QuestionID)
		if err := db.CompleteJob(ctx, leased, func(ctx context.Context, tx *storage.JobTx) error {
			return tx.StoreAnswer(ctx, leased.ID, storage.NewAnswer{QuestionID: p.QuestionID, Kind: storage.AnswerNone, Basis: storage.Basis(nil, nil)})
		}); err != nil {
			t.Fatal(err)
		}
	}
	if want := []string{port.ID, tokens.ID, declared.ID}; !slices.Equal(order, want) {
		t.Errorf("answered %v, want %v (demand order, declared last, one-session question never)", order, want)
	}
	clk.Add(25 * time.Hour)
	if job, _ := db.QueueAnswer(ctx, refresh); job == nil {
		t.Errorf("no job once the answers are older than MaxAge")
	}
}

func TestMaintain_PurgesAsks(t *testing.T) {
	t.Parallel()
	db := storagetest.Open(t)
	clk := newClock(db, time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	recordAsks(t, db,
		ask(t, "global", "codex", "s1", "where is the changelog", "C1"),
		ask(t, "global", "claude-code", "s2", "the changelog: where?", "C1"),
	)
	declared, _ := db.DeclareQuestion(ctx, "global", text(t, "who owns billing"), "codex")
	clk.Add(20 * 24 * time.Hour)
	recordAsks(t, db, ask(t, "global", "claude-code", "s3", "where is the changelog"))
	clk.Add(15 * 24 * time.Hour)
	rep, err := db.Maintain(ctx, storage.Maintenance{Retention: 30 * 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if rep.AsksPurged != 2 || rep.QuestionsPurged != 0 {
		t.Errorf("report %+v, want 2 asks and no question purged", rep)
	}
	qs := questionsOf(t, db)
	if len(qs) != 2 {
		t.Fatalf("%d questions left, want 2", len(qs))
	}
	for _, q := range qs {
		if q.ID != declared.ID && (q.Asks != 1 || q.Sessions != 1 || q.Clients != 1) {
			t.Errorf("after the purge: asks %d sessions %d clients %d, want 1 1 1", q.Asks, q.Sessions, q.Clients)
		}
	}
	clk.Add(31 * 24 * time.Hour)
	rep, _ = db.Maintain(ctx, storage.Maintenance{Retention: 30 * 24 * time.Hour})
	if rep.AsksPurged != 1 || rep.QuestionsPurged != 1 || !strings.Contains(rep.String(), "recorded queries purged 1, questions purged 1") {
		t.Errorf("second run %+v (%s), want the last ask and its question purged", rep, rep)
	}
	if qs := questionsOf(t, db); len(qs) != 1 || qs[0].ID != declared.ID {
		t.Errorf("left %d questions, want the declared one only", len(qs))
	}
}

// TestDB_RenameNamespaces_Questions holds R-N6 for questions: a rename
// moves them with their asks and answers.
func TestDB_RenameNamespaces_Questions(t *testing.T) {
	t.Parallel()
	db := storagetest.Open(t)
	recordAsks(t, db, ask(t, "github/old/api", "codex", "s1", "where is the changelog"))
	q := questionsOf(t, db)[0]
	storeAnswer(t, db, storage.NewAnswer{QuestionID: q.ID, Kind: storage.AnswerNone, Basis: storage.Basis(nil, nil)})
	done, err := db.RenameNamespaces(ctx, []storage.Rename{{From: "github/old", To: "github/new"}})
	if err != nil || done[0].Rows["questions"] != 1 {
		t.Fatalf("rename: %+v, %v; want one question moved", done, err)
	}
	got, err := db.FindQuestion(ctx, []string{"github/new/api"}, "changelog?")
	if err != nil || got.ID != q.ID || got.Asks != 1 || got.Answer == nil {
		t.Errorf("after the rename: %+v, %v; want the question with its ask and answer", got, err)
	}
}

// TestMigration_DemandByClient: migration 0091 weighs the sessions
// already recorded by client.
func TestMigration_DemandByClient(t *testing.T) {
	storagetest.SQLiteOnly(t, "a SQLite migration applied to an older file")
	t.Parallel()
	const ns = "global"
	path := filepath.Join(t.TempDir(), "db")
	db := storagetest.OpenPath(t, path)
	for i := range 30 {
		recordAsks(t, db, ask(t, ns, "lan-reader", fmt.Sprintf("invented-%d", i), "which port does the exporter use", "P1"))
	}
	recordAsks(t, db,
		ask(t, ns, "claude-code", "s1", "where is the changelog", "C1"),
		ask(t, ns, "codex", "s2", "where is the changelog", "C1"),
		ask(t, ns, "codex", "s3", "where is the changelog", "C1"),
	)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	// Back to the schema before 0091: sessions counted alone.
	raw, err := driver.Open("file:"+path, fts5.Register)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`DELETE FROM migrations WHERE name = '0091_demand_by_client.sql'`,
		`DROP TRIGGER question_sessions_insert`,
		`DROP TRIGGER question_sessions_delete`,
		`ALTER TABLE questions DROP COLUMN sessions`,
		`ALTER TABLE questions RENAME COLUMN weight TO sessions`,
		`UPDATE questions SET sessions = (SELECT count(*) FROM question_sessions AS s WHERE s.question = questions.seq)`,
		`CREATE TRIGGER question_sessions_insert AFTER INSERT ON question_sessions BEGIN
			UPDATE questions SET sessions = sessions + 1 WHERE seq = new.question;
		END`,
		`CREATE TRIGGER question_sessions_delete AFTER DELETE ON question_sessions BEGIN
			UPDATE questions SET sessions = sessions - 1 WHERE seq = old.question;
		END`,
	} {
		if _, err := raw.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	raw.Close()
	db = storagetest.OpenPath(t, path)
	qs := questionsOf(t, db)
	if len(qs) != 2 || qs[0].Text != "where is the changelog" {
		t.Fatalf("top question %q, want the one of two clients", qs[0].Text)
	}
	if w := 1 + storage.SessionWeight(2); qs[0].Sessions != 3 || qs[0].Weight != w {
		t.Errorf("sessions %d weight %v, want 3 and %v", qs[0].Sessions, qs[0].Weight, w)
	}
	if w := storage.SessionWeight(30); qs[1].Sessions != 30 || qs[1].Weight != w || qs[1].Demand != w {
		t.Errorf("sessions %d weight %v demand %v, want 30 and %v", qs[1].Sessions, qs[1].Weight, qs[1].Demand, w)
	}
	// The triggers go on from there.
	recordAsks(t, db, ask(t, ns, "claude-code", "s4", "where is the changelog", "C1"))
	if q := questionsOf(t, db)[0]; q.Weight != storage.SessionWeight(2)*2 {
		t.Errorf("weight %v after one more session, want %v", q.Weight, storage.SessionWeight(2)*2)
	}
}

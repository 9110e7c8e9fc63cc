package server_test

import (
	"testing"

	"github.com/hearth-memory/hearth/server/servertest"
	"github.com/hearth-memory/hearth/storage"
)

// The tests in package server_test call the server as its clients do,
// over gRPC, REST and MCP through servertest (docs/design.md §19), with
// the short names the daemon's tests use for its helpers.
var (
	secretGitHub  = servertest.SecretGitHub
	get           = servertest.Get
	str           = servertest.Str
	num           = servertest.Num
	list          = servertest.List
	closeArgs     = servertest.CloseArgs
	storeArgs     = servertest.StoreArgs
	testOptions   = servertest.Options
	sameRecords   = servertest.SameRecords
	newTestClock  = servertest.NewClock
	sameButDisk   = servertest.SameButDisk
	anchoredArgs  = servertest.AnchoredArgs
	must          = servertest.Must
	anchorState   = servertest.AnchorState
	parityOptions = servertest.ParityOptions
	routes        = servertest.Routes
	dialFrom      = servertest.DialFrom
	readerIP      = servertest.ReaderIP
)

// awaitAnswer polls memory_answer (REST) for the question text in ns until
// the worker has answered it, and returns the answer.
func awaitAnswer(tb testing.TB, td *servertest.Server, tok, ns, text string) map[string]any {
	tb.Helper()
	return servertest.AwaitAnswer(tb, td.DB, td.REST, tok, ns, text)
}

// seedReceipt stores an extraction receipt of a close in ns, once per
// server, and returns its id.
func seedReceipt(t *testing.T, td *servertest.Server, ns string) string {
	t.Helper()
	return servertest.SeedReceipt(t, td.DB, ns)
}

// auditRows counts the server's audit rows of action for record id.
func auditRows(tb testing.TB, td *servertest.Server, action storage.Action, id string) int {
	tb.Helper()
	return servertest.AuditRows(tb, td.DB, action, id)
}

// questionIn returns the question of memory_questions in ns with the text.
func questionIn(tb testing.TB, td *servertest.Server, tok, ns, text string) map[string]any {
	tb.Helper()
	return servertest.QuestionIn(tb, td.DB, td.REST, tok, ns, text)
}

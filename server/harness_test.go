package server_test

import "github.com/hearth-memory/hearth/server/servertest"

// The tests in package server_test call the server as its clients do,
// over gRPC, REST and MCP through servertest (docs/design.md §19), with
// the short names the daemon's tests use for its helpers.
var (
	get          = servertest.Get
	str          = servertest.Str
	num          = servertest.Num
	list         = servertest.List
	closeArgs    = servertest.CloseArgs
	storeArgs    = servertest.StoreArgs
	testOptions  = servertest.Options
	sameRecords  = servertest.SameRecords
	newTestClock = servertest.NewClock
)

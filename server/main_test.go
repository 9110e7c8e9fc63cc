package server_test

import (
	"os"
	"testing"

	"github.com/hearth-memory/hearth/storage/storagetest"
)

// TestMain runs the tests through storagetest.Main, which stops the
// private PostgreSQL that the front-end tests start (docs/postgres.md,
// "Tests").
func TestMain(m *testing.M) { os.Exit(storagetest.Main(m)) }

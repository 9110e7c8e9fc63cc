package workers_test

import (
	"os"
	"testing"

	"github.com/hearth-memory/hearth/storage/storagetest"
)

// TestMain runs the tests through storagetest.Main: with
// HEARTH_STORAGE_BACKEND=postgres their stores are PostgreSQL databases,
// and Main stops the private PostgreSQL they started (docs/postgres.md,
// "Tests").
func TestMain(m *testing.M) { os.Exit(storagetest.Main(m)) }

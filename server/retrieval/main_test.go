package retrieval_test

import (
	"os"
	"testing"

	"github.com/hearth-memory/hearth/storage/storagetest"
)

// TestMain runs the tests through storagetest.Main: with
// HEARTH_STORAGE_BACKEND=postgres their stores are PostgreSQL databases,
// and the front-end tests open one there whatever the backend; Main stops
// the private PostgreSQL they started (docs/postgres.md, "Tests").
func TestMain(m *testing.M) { os.Exit(storagetest.Main(m)) }

//go:build failpoint

package main

import "os"

// failpoint reads HEARTH_FAILPOINT. Only binaries built with the failpoint
// tag read it: the process-kill test builds one (see kill_test.go).
func failpoint() string { return os.Getenv("HEARTH_FAILPOINT") }

//go:build !failpoint

package main

// failpoint is always empty in a normal build: the crash-test hook of
// package workers cannot be switched on in production.
func failpoint() string { return "" }

//go:build !linux

package main

// releaseImagePages is Linux's alone (imagepages_linux.go); elsewhere the
// binary's pages stay mapped as the system maps them.
func releaseImagePages() (int, error) { return 0, nil }

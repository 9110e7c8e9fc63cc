//go:build !postgres

package main

// postgresBuilt says this build links PostgreSQL's driver: without the
// postgres build tag it does not (docs/operations.md, "PostgreSQL").
const postgresBuilt = false

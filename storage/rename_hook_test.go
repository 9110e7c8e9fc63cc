package storage

// AddRenameTable lists one more table for RenameNamespaces until the
// returned function runs: tests use it to show that a table a later
// migration adds is one line of renameTables.
func AddRenameTable(table, column string) (restore func()) {
	old := renameTables
	renameTables = append(renameTables[:len(renameTables):len(renameTables)], struct {
		table, column string
		revision      bool
	}{table, column, false})
	return func() { renameTables = old }
}

package fts

import (
	"github.com/ncruces/go-sqlite3"

	"github.com/hearth-memory/hearth/storage/fulltext"
)

// cjkFunction is hearth_has_cjk(title, content), true when either holds a
// CJK character (fulltext.HasCJK): the records records_cjk indexes
// (migration 0081). Plain English text, most records, then costs
// records_cjk nothing on a write.
const cjkFunction = "hearth_has_cjk"

// registerCJK registers hearth_has_cjk on a connection. It is innocuous
// (the schema's triggers and views may call it) and deterministic.
func registerCJK(c *sqlite3.Conn) error {
	return c.CreateFunction(cjkFunction, 2, sqlite3.DETERMINISTIC|sqlite3.INNOCUOUS, func(ctx sqlite3.Context, arg ...sqlite3.Value) {
		ctx.ResultBool(fulltext.HasCJK(arg[0].Text()) || fulltext.HasCJK(arg[1].Text()))
	})
}

package storagetest

import (
	"encoding/binary"
	"os"
	"testing"

	"github.com/ncruces/go-sqlite3/driver"
	"github.com/ncruces/go-sqlite3/ext/fts5"
)

// Pages lists the pages of table's b-tree in the closed database file at
// path, leaves last: the root, the interior pages, then the leaves.
func Pages(tb testing.TB, path, table string) (pageSize int, interior, leaves []int) {
	tb.Helper()
	db, err := driver.Open("file:"+path, fts5.Register)
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	var root int
	if err := db.QueryRow(`SELECT rootpage FROM sqlite_schema WHERE name = ?`, table).Scan(&root); err != nil {
		tb.Fatalf("root page of %s: %v", table, err)
	}
	if err := db.QueryRow(`PRAGMA page_size`).Scan(&pageSize); err != nil {
		tb.Fatal(err)
	}
	if err := db.Close(); err != nil {
		tb.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var walk func(n int)
	walk = func(n int) {
		p := make([]byte, pageSize)
		if _, err := f.ReadAt(p, int64(n-1)*int64(pageSize)); err != nil {
			tb.Fatalf("read page %d: %v", n, err)
		}
		h := 0
		if n == 1 {
			h = 100 // the file header comes first
		}
		switch p[h] {
		case 0x0a, 0x0d: // index and table leaves
			leaves = append(leaves, n)
			return
		case 0x02, 0x05: // index and table interior pages
		default:
			tb.Fatalf("page %d of %s is not a b-tree page (type %#x)", n, table, p[h])
		}
		interior = append(interior, n)
		cells := int(binary.BigEndian.Uint16(p[h+3:]))
		for i := range cells {
			off := int(binary.BigEndian.Uint16(p[h+12+2*i:]))
			walk(int(binary.BigEndian.Uint32(p[off:])))
		}
		walk(int(binary.BigEndian.Uint32(p[h+8:])))
	}
	walk(root)
	return pageSize, interior, leaves
}

// Overwrite writes garbage over whole pages of the closed database file at
// path, as a failing disk might.
func Overwrite(tb testing.TB, path string, pageSize int, pages ...int) {
	tb.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	junk := make([]byte, pageSize)
	for i := range junk {
		junk[i] = byte(i*131 + 7)
	}
	for _, n := range pages {
		if _, err := f.WriteAt(junk, int64(n-1)*int64(pageSize)); err != nil {
			tb.Fatal(err)
		}
	}
	if err := f.Sync(); err != nil {
		tb.Fatal(err)
	}
}

// OverwriteAt writes n bytes of garbage at offset off of the file at path.
func OverwriteAt(tb testing.TB, path string, off int64, n int) {
	tb.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	junk := make([]byte, n)
	for i := range junk {
		junk[i] = byte(i*37 + 11)
	}
	if _, err := f.WriteAt(junk, off); err != nil {
		tb.Fatal(err)
	}
}

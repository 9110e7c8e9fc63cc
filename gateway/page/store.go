package page

import (
	"strconv"
	"time"

	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
)

// The database section (issue #21): whether writes work, and if not why
// and what to do; the disk's free space; the last integrity check; the
// write-ahead log. It is drawn from memory_status's store field, first on
// the page when something is wrong.

// storeView is the database section.
type storeView struct {
	// Known is false when memory_status failed or carried no store field.
	Known bool
	// State is ok, disk_full or read_only; Alert is set unless ok.
	State, Label string
	Alert        bool
	// Backend names the database: SQLite, or PostgreSQL and its Database
	// (a URL without its password), where the file, disk, check and log
	// rows, SQLite's own, are left out.
	Backend, Database string
	Problems          []string
	Path              string
	Free              string
	Refused           string
	Damage            []string
	Check             string
	WAL               string
}

// stateLabels word the states for the page.
var stateLabels = map[string]string{
	"ok":        "writable",
	"disk_full": "disk full: writes refused",
	"read_only": "damaged: read-only",
}

func newStoreView(s *hearthv1.StoreHealth, loc *time.Location, database string) storeView {
	if s == nil || s.GetState() == "" {
		return storeView{}
	}
	v := storeView{Known: true, State: s.GetState(), Label: stateLabels[s.GetState()], Alert: s.GetState() != "ok",
		Problems: s.GetProblems(), Path: s.GetPath(), Damage: s.GetDamage(), Free: "unknown", Backend: "SQLite"}
	if v.Label == "" {
		v.Label = s.GetState()
	}
	if database != "" {
		v.Backend, v.Database = "PostgreSQL", database
		return v
	}
	if s.FreeMib != nil {
		v.Free = mib(s.GetFreeMib()) + " free of " + mib(s.GetTotalMib())
	}
	if s.GetDiskFullSince() != nil {
		v.Refused = itoa(s.GetWritesRefused()) + " writes refused since " +
			s.GetDiskFullSince().AsTime().In(loc).Format(timeLayout)
	}
	if s.GetCheckedAt() != nil {
		v.Check = s.GetCheckedAt().AsTime().In(loc).Format(timeLayout) + ": " + s.GetCheck()
	} else {
		v.Check = "not yet"
	}
	v.WAL = itoa(s.GetWalKib()) + " KiB; "
	if s.GetWalKib() >= 1024 {
		v.WAL = mib(s.GetWalKib()>>10) + "; "
	}
	v.WAL += itoa(s.GetCheckpoints()) + " checkpoints truncated it since start"
	if s.GetCheckpoints() > 0 {
		v.WAL += " (longest " + itoa(s.GetCheckpointMaxMs()) + " ms)"
	}
	return v
}

// mib writes a size given in MiB.
func mib(n uint32) string {
	if n >= 10*1024 {
		return strconv.FormatFloat(float64(n)/1024, 'f', 1, 64) + " GiB"
	}
	return itoa(n) + " MiB"
}

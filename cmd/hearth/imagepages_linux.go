package main

import (
	"bufio"
	"bytes"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// releaseImagePages drops this process's mappings of its own executable's
// code and read-only data: MADV_DONTNEED on its private read-only mappings
// of /proc/self/exe (r-xp, r--p) that hold no private copy of a page. The
// pages stay in the kernel's file cache, and a page the process touches
// again is mapped again on that touch (a minor fault, no read of the disk
// while the kernel keeps it cached). Start-up touches most of the binary,
// and the kernel maps up to 64 KiB around each page touched, so without
// this the resident set counts most of the binary's 27 MB for as long as
// the process lives (docs/operations.md, "Memory"). It returns how many
// bytes of mappings it released.
func releaseImagePages() (int, error) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return 0, err
	}
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return 0, err
	}
	released := 0
	for _, m := range imageMappings(smaps, exe) {
		if _, _, e := unix.Syscall(unix.SYS_MADVISE, m.start, m.end-m.start, unix.MADV_DONTNEED); e != 0 {
			return released, e
		}
		released += int(m.end - m.start)
	}
	return released, nil
}

// mapping is an address range of /proc/PID/smaps.
type mapping struct{ start, end uintptr }

// imageMappings returns the mappings in smaps (the text of
// /proc/PID/smaps) of the file exe that are private and read-only (code,
// r-xp, and read-only data, r--p) and hold no anonymous page: a page
// written through ptrace (a debugger's breakpoint) is a private copy that
// MADV_DONTNEED would drop, so a mapping holding one is left alone, and so
// is every writable mapping (the data segment).
func imageMappings(smaps []byte, exe string) []mapping {
	var out []mapping
	image := false // whether the mapping being read is one of exe's read-only ones
	sc := bufio.NewScanner(bytes.NewReader(smaps))
	for sc.Scan() {
		line := sc.Bytes()
		if m, perm, path, ok := mappingLine(line); ok {
			image = path == exe && (perm == "r-xp" || perm == "r--p")
			if image {
				out = append(out, m)
			}
			continue
		}
		// Anonymous:  4 kB
		if f := bytes.Fields(line); image && len(f) == 3 && string(f[0]) == "Anonymous:" && string(f[1]) != "0" {
			out = out[:len(out)-1]
			image = false
		}
	}
	return out
}

// mappingLine parses a mapping's first line in /proc/PID/smaps,
// "00400000-0100a000 r-xp 00000000 fd:00 1234   /path/to/hearth": its
// range, permissions and path (the rest of the line, which may hold
// spaces). ok is false for the other lines (a field and its value).
func mappingLine(line []byte) (m mapping, perm, path string, ok bool) {
	f := bytes.Fields(line)
	if len(f) < 5 {
		return m, "", "", false
	}
	lo, hi, found := bytes.Cut(f[0], []byte("-"))
	if !found {
		return m, "", "", false
	}
	start, err1 := strconv.ParseUint(string(lo), 16, 64)
	end, err2 := strconv.ParseUint(string(hi), 16, 64)
	if err1 != nil || err2 != nil || end < start {
		return m, "", "", false
	}
	// The path follows the fifth field (the inode) after spaces.
	rest := line
	for range 5 {
		rest = bytes.TrimLeft(rest, " \t")
		if i := bytes.IndexAny(rest, " \t"); i >= 0 {
			rest = rest[i:]
		} else {
			rest = nil
		}
	}
	return mapping{uintptr(start), uintptr(end)}, string(f[1]), string(bytes.TrimLeft(rest, " \t")), true
}

package main

import (
	"bufio"
	"bytes"
	"os"
	"slices"
	"strconv"
	"testing"
)

// TestImageMappings picks, from /proc/PID/smaps, the executable's private
// read-only mappings that hold no private copy of a page, and nothing else.
func TestImageMappings(t *testing.T) {
	t.Parallel()
	const exe = "/opt/my tools/hearth"
	smaps := `00400000-0100a000 r-xp 00000000 fd:00 1234                               /opt/my tools/hearth
Size:              12328 kB
Rss:               11492 kB
Anonymous:             0 kB
VmFlags: rd ex mr mw me dw sd
0100a000-01e7b000 r--p 00c0a000 fd:00 1234                               /opt/my tools/hearth
Size:              14788 kB
Anonymous:             0 kB
VmFlags: rd mr mw me dw sd
01e7b000-01f39000 rw-p 01a7b000 fd:00 1234                               /opt/my tools/hearth
Anonymous:           156 kB
02000000-02001000 r-xp 00000000 fd:00 1234                               /opt/my tools/hearth
Anonymous:             4 kB
7f0000000000-7f0000001000 r--p 00000000 fd:00 99                         /usr/lib/other.so
Anonymous:             0 kB
7f0000002000-7f0000003000 r--p 00000000 fd:00 1234                       /opt/my tools/hearth (deleted)
Anonymous:             0 kB
7f0000004000-7f0000008000 rw-p 00000000 00:00 0
Anonymous:            16 kB
7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0                          [stack]
Anonymous:           132 kB
`
	got := imageMappings([]byte(smaps), exe)
	want := []mapping{{0x400000, 0x100a000}, {0x100a000, 0x1e7b000}}
	if !slices.Equal(got, want) {
		t.Errorf("imageMappings = %x, want %x (code and read-only data; not the data segment, a mapping holding a private page, another file)", got, want)
	}
}

// TestReleaseImagePages drops this test binary's mapping of its read-only
// data after touching every page of it: its resident set in
// /proc/self/smaps goes from the whole mapping to a small part (what the
// test touches again before reading it). Not parallel: tests running
// beside it would touch the same pages between the release and the
// reading.
func TestReleaseImagePages(t *testing.T) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	rodata := func() (m mapping, rssKiB int) {
		t.Helper()
		b, err := os.ReadFile("/proc/self/smaps")
		if err != nil {
			t.Fatal(err)
		}
		found := false
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			if mm, perm, path, ok := mappingLine(sc.Bytes()); ok {
				if found {
					break
				}
				found = path == exe && perm == "r--p"
				m = mm
				continue
			}
			if f := bytes.Fields(sc.Bytes()); found && len(f) == 3 && string(f[0]) == "Rss:" {
				rssKiB, _ = strconv.Atoi(string(f[1]))
			}
		}
		if !found {
			t.Fatalf("no r--p mapping of %s in /proc/self/smaps", exe)
		}
		return m, rssKiB
	}
	m, _ := rodata()
	// Reading the range through /proc/self/mem maps every page of it.
	mem, err := os.Open("/proc/self/mem")
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	buf := make([]byte, 1<<20)
	for off := m.start; off < m.end; off += uintptr(len(buf)) {
		n := min(uintptr(len(buf)), m.end-off)
		if _, err := mem.ReadAt(buf[:n], int64(off)); err != nil {
			t.Fatalf("reading %x: %v", off, err)
		}
	}
	sizeKiB := int(m.end-m.start) >> 10
	if _, before := rodata(); before < sizeKiB*9/10 {
		t.Fatalf("read-only data: %d of %d KiB resident after touching every page, want nearly all", before, sizeKiB)
	}
	released, err := releaseImagePages()
	if err != nil {
		t.Fatal(err)
	}
	if released < int(m.end-m.start) {
		t.Errorf("releaseImagePages released %d bytes, want at least the read-only data's %d", released, m.end-m.start)
	}
	if _, after := rodata(); after > sizeKiB/4 {
		t.Errorf("read-only data: %d of %d KiB resident after the release, want at most a quarter", after, sizeKiB)
	}
}

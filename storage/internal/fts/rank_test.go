package fts

import "testing"

// TestRank_Varint holds varint to SQLite's encoding.
func TestRank_Varint(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		b    []byte
		v    uint64
		size int
	}{
		{[]byte{0x05}, 5, 1},
		{[]byte{0x81, 0x00}, 128, 2},
		{[]byte{0xff, 0x7f}, 16383, 2},
		{[]byte{0x81, 0x80, 0x00}, 16384, 3},
		{[]byte{0x81}, 0, 0}, // cut short
	} {
		if v, n := varint(tt.b); v != tt.v || n != tt.size {
			t.Errorf("varint(%x) = %d, %d; want %d, %d", tt.b, v, n, tt.v, tt.size)
		}
	}
}

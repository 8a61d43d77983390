package protocol

// Word-at-a-time scanning for the escapers: a string's bytes are checked
// eight at a time for any that needs attention, so that long plain runs
// (message bodies, receipt handles) cost a few operations per word rather
// than per byte. Each test below is exact when read as a boolean.

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// load64 reads s[i:i+8] little-endian; the compiler makes it one load.
func load64(s string, i int) uint64 {
	_ = s[i+7]
	return uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
		uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
}

// hasLess reports a byte below n (n ≤ 128) in x, ignoring bytes ≥ 0x80.
func hasLess(x uint64, n byte) uint64 { return (x - lsb*uint64(n)) & ^x & msb }

// hasByte reports a byte equal to c in x.
func hasByte(x uint64, c byte) uint64 {
	v := x ^ lsb*uint64(c)
	return (v - lsb) & ^v & msb
}

// plainJSONWords returns the first index from i at which a word of s holds
// a byte jsonPlain refuses (or fewer than 8 bytes remain).
func plainJSONWords(s string, i int) int {
	for ; i+8 <= len(s); i += 8 {
		x := load64(s, i)
		if x&msb|hasLess(x, 0x20)|hasByte(x, '"')|hasByte(x, '\\') != 0 {
			break
		}
	}
	return i
}

// plainXMLWords is plainJSONWords for escapeText's xmlPlain (tab and
// newline stop it; the byte loop lets them through).
func plainXMLWords(s string, i int) int {
	for ; i+8 <= len(s); i += 8 {
		x := load64(s, i)
		if x&msb|hasLess(x, 0x20)|hasByte(x, '"')|hasByte(x, '&')|hasByte(x, '<')|hasByte(x, '>') != 0 {
			break
		}
	}
	return i
}

package protocol

import (
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// Timestamps and doubles as the query wire (form in, XML out) writes them.

// xmlTimeLayout is how AWS's query services write timestamps: UTC, with
// milliseconds only when there are any ("2026-01-02T03:04:05Z",
// "2026-01-02T03:04:05.123Z").
const xmlTimeLayout = "2006-01-02T15:04:05.999Z"

func appendXMLTime(b []byte, t time.Time) []byte {
	return t.UTC().Truncate(time.Millisecond).AppendFormat(b, xmlTimeLayout)
}

// queryTimeLayouts are the ISO 8601 forms a query timestamp may take:
// with an offset or Z, with or without fractional seconds, or without a
// zone (UTC), or a bare date.
var queryTimeLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02T15:04:05.999999999",
	"2006-01-02T15:04:05.999999999Z0700",
	"2006-01-02T15:04Z07:00",
	"2006-01-02T15:04",
	"2006-01-02",
}

// parseQueryTime reads an ISO 8601 timestamp.
func parseQueryTime(s string) (time.Time, bool) {
	for _, layout := range queryTimeLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), true
		}
	}
	return time.Time{}, false
}

// appendJavaDouble writes f as Java's Double.toString does, which is what
// AWS's query services put in their XML: "1.0", "0.5", "1.0E-5",
// "1.2345678E7", "NaN", "Infinity".
func appendJavaDouble(b []byte, f float64, bits int) []byte {
	switch {
	case math.IsNaN(f):
		return append(b, "NaN"...)
	case math.IsInf(f, 1):
		return append(b, "Infinity"...)
	case math.IsInf(f, -1):
		return append(b, "-Infinity"...)
	case f == 0:
		if math.Signbit(f) {
			return append(b, "-0.0"...)
		}
		return append(b, "0.0"...)
	}
	if f < 0 {
		b = append(b, '-')
		f = -f
	}
	// The shortest digits that read back as f, and f's decimal exponent.
	var buf [32]byte
	e := strconv.AppendFloat(buf[:0], f, 'e', -1, bits)
	mant, exps, _ := strings.Cut(string(e), "e")
	exp, _ := strconv.Atoi(exps)
	digits := strings.Replace(mant, ".", "", 1)
	if f >= 1e-3 && f < 1e7 {
		if exp >= 0 {
			for len(digits) <= exp {
				digits += "0"
			}
			b = append(b, digits[:exp+1]...)
			b = append(b, '.')
			if rest := digits[exp+1:]; rest != "" {
				return append(b, rest...)
			}
			return append(b, '0')
		}
		b = append(b, "0."...)
		for range -exp - 1 {
			b = append(b, '0')
		}
		return append(b, digits...)
	}
	b = append(b, digits[0], '.')
	if len(digits) > 1 {
		b = append(b, digits[1:]...)
	} else {
		b = append(b, '0')
	}
	b = append(b, 'E')
	return strconv.AppendInt(b, int64(exp), 10)
}

// timeOf reads a time.Time member without boxing it.
func timeOf(v reflect.Value) time.Time {
	t, _ := reflect.TypeAssert[time.Time](v)
	return t
}

// epochSeconds is t as the JSON and CBOR wires send a timestamp: seconds
// since the epoch, with milliseconds as the fraction (as the SDKs do).
func epochSeconds(t time.Time) float64 {
	return float64(t.UnixMilli()) / 1e3
}

// Timestamps outside years 0001 to 9999 have no ISO 8601 form and are
// refused.
const (
	minEpochSeconds = -62135596800
	maxEpochSeconds = 253402300799
)

// fromEpochSeconds reads a JSON or CBOR timestamp, rounded to the
// millisecond so that 1.7e9 + 0.123 comes back as .123 exactly. ok is false
// outside years 0001 to 9999.
func fromEpochSeconds(s float64) (time.Time, bool) {
	if math.IsNaN(s) || s < minEpochSeconds || s >= maxEpochSeconds+1 {
		return time.Time{}, false
	}
	return time.UnixMilli(int64(math.Round(s * 1e3))).UTC(), true
}

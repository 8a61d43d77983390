package clock

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// day is 24 hours: Ferry's clock, as AWS's, knows no daylight saving.
const day = 24 * time.Hour

// ParseDuration reads a Go duration that may start with a count of days,
// as Ferry's admin API and CLI take them: "14d", "1d12h", "36h", "90s".
func ParseDuration(s string) (time.Duration, error) {
	bad := fmt.Errorf("duration %q: want a Go duration, with days as d: 14d, 1d12h, 36h, 90s", s)
	days, rest := int64(0), s
	if i := strings.IndexByte(s, 'd'); i >= 0 {
		n, err := strconv.ParseUint(s[:i], 10, 63)
		if err != nil || n > uint64((1<<63-1)/int64(day)) {
			return 0, bad
		}
		days, rest = int64(n), s[i+1:]
		if rest == "" {
			return time.Duration(days) * day, nil
		}
	}
	d, err := time.ParseDuration(rest)
	if err != nil || (days > 0 && d < 0) {
		return 0, bad
	}
	total := d + time.Duration(days)*day
	if days > 0 && total < d {
		return 0, bad // overflow
	}
	return total, nil
}

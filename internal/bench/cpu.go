package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// cpuMark is the CPU the broker's processes and the database's had used
// when a scenario began; a figure is nil where it could not be read.
type cpuMark struct {
	e      *env
	server *float64
	db     *float64
}

// cpuFrom reads the CPU used so far by every node and by the processes of
// DBPIDs.
func (e *env) cpuFrom(ctx context.Context) cpuMark {
	m := cpuMark{e: e}
	m.server, m.db = e.cpuNow(ctx)
	return m
}

// perMessage is the CPU each side spent since m, in microseconds per
// message over n messages; nil where a reading failed or n is zero.
func (m cpuMark) perMessage(ctx context.Context, n int64) (server, db *float64) {
	if n <= 0 {
		return nil, nil
	}
	s, d := m.e.cpuNow(context.WithoutCancel(ctx))
	per := func(from, to *float64) *float64 {
		if from == nil || to == nil {
			return nil
		}
		v := (*to - *from) * 1e6 / float64(n)
		return &v
	}
	return per(m.server, s), per(m.db, d)
}

// cpuNow reads, in seconds, the CPU used by every node (the sum of their
// process_cpu_seconds_total) and by the processes of DBPIDs; nil for a
// side with no figure. A node that does not answer leaves the server's
// figure out: a sum without it would flatter the broker.
func (e *env) cpuNow(ctx context.Context) (server, db *float64) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if len(e.cfg.Endpoints) > 0 {
		var sum float64
		ok := true
		for _, ep := range e.cfg.Endpoints {
			fig, err := scrape(ctx, e.cfg.HTTPClient, ep)
			v, found := fig["process_cpu_seconds_total"]
			if err != nil || !found {
				ok = false
				break
			}
			sum += v
		}
		if ok {
			server = &sum
		}
	}
	if len(e.cfg.DBPIDs) > 0 {
		var sum float64
		for _, pid := range e.cfg.DBPIDs {
			v, err := treeCPU(pid)
			if err != nil {
				e.note("database CPU: %v", err)
				return server, nil
			}
			sum += v
		}
		db = &sum
	}
	return server, db
}

// clockTicks is Linux's USER_HZ, the unit of /proc/PID/stat's times; it
// is 100 on every architecture Go runs Linux on.
const clockTicks = 100

// treeCPU is the CPU, in seconds, used so far by process pid and its
// children, the live ones (read one by one) and those that ended (which
// their parent's stat counts once it has waited for them), from /proc:
// PostgreSQL runs a process per connection beside its postmaster. A child
// reaped while the children are read would be in neither figure (its
// own stat gone, the parent's read before), so the scan is taken again
// until the parent's count of its reaped children held still across it.
func treeCPU(pid int) (float64, error) {
	for range 10 {
		before, err := procStat(pid)
		if err != nil {
			return 0, err
		}
		children, err := childrenTicks(pid)
		if err != nil {
			return 0, err
		}
		after, err := procStat(pid)
		if err != nil {
			return 0, err
		}
		if after.cutime+after.cstime == before.cutime+before.cstime {
			return float64(after.utime+after.stime+after.cutime+after.cstime+children) / clockTicks, nil
		}
	}
	return 0, fmt.Errorf("process %d: children kept ending while they were read", pid)
}

// childrenTicks sums the CPU ticks of pid's live (or not yet reaped)
// children and of the children they reaped.
func childrenTicks(pid int) (int64, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, fmt.Errorf("list processes: %w", err)
	}
	var ticks int64
	for _, de := range entries {
		child, err := strconv.Atoi(de.Name())
		if err != nil || child == pid {
			continue
		}
		st, err := procStat(child)
		if err != nil || st.ppid != pid {
			continue // gone meanwhile, or another's
		}
		ticks += st.utime + st.stime + st.cutime + st.cstime
	}
	return ticks, nil
}

// stat is what treeCPU needs of /proc/PID/stat.
type stat struct {
	ppid                         int
	utime, stime, cutime, cstime int64
}

func procStat(pid int) (stat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return stat{}, fmt.Errorf("read process %d: %w", pid, err)
	}
	return parseStat(string(b))
}

// parseStat reads a /proc/PID/stat line. The command, in parentheses, may
// hold spaces and parentheses itself, so the fields are counted from the
// last closing one: ppid is field 4, utime to cstime are fields 14 to 17.
func parseStat(line string) (stat, error) {
	end := strings.LastIndexByte(line, ')')
	if end < 0 {
		return stat{}, errors.New("stat: no command")
	}
	f := strings.Fields(line[end+1:]) // f[0] is field 3, the state
	if len(f) < 15 {
		return stat{}, errors.New("stat: too few fields")
	}
	var st stat
	var err error
	num := func(i int) int64 {
		v, perr := strconv.ParseInt(f[i-3], 10, 64)
		if perr != nil && err == nil {
			err = fmt.Errorf("stat: field %d: %w", i, perr)
		}
		return v
	}
	st.ppid = int(num(4))
	st.utime, st.stime, st.cutime, st.cstime = num(14), num(15), num(16), num(17)
	return st, err
}

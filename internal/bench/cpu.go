package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cpuMark is the CPU the broker's processes, the database's and this one
// had used, and the requests sent, when a scenario began; a figure is nil
// where it could not be read.
type cpuMark struct {
	e        *env
	server   *float64
	db       *float64
	client   *float64
	requests int64
	syncs    syncMark
}

// cpuFrom reads the CPU used so far by the broker, by the processes of
// DBPIDs and by this process, and the requests sent so far.
func (e *env) cpuFrom(ctx context.Context) cpuMark {
	// Scraped before the CPU is read: the scrape is not the scenario's.
	syncs := e.syncsNow(ctx)
	m := cpuMark{e: e, requests: e.traffic.requests.Load(), client: selfCPU(), syncs: syncs}
	m.server, m.db = e.cpuNow(ctx)
	return m
}

// record sets the result's requests since m and the CPU each side spent
// since m, in microseconds per verified message and, the server's, per
// request; a figure stays nil where a reading failed or there is nothing
// to divide by.
func (m cpuMark) record(ctx context.Context) {
	r := &m.e.res
	r.Requests = m.e.traffic.requests.Load() - m.requests
	client := selfCPU()
	server, db := m.e.cpuNow(context.WithoutCancel(ctx))
	per := func(from, to *float64, n int64) *float64 {
		if from == nil || to == nil || n <= 0 {
			return nil
		}
		v := (*to - *from) * 1e6 / float64(n)
		return &v
	}
	n := r.Verified
	if m.e.cpuPer > 0 {
		n = m.e.cpuPer
	}
	r.ServerCPU, r.DBCPU, r.ClientCPU = per(m.server, server, n), per(m.db, db, n), per(m.client, client, n)
	r.ServerCPUPerRequest = per(m.server, server, r.Requests)
	r.CommitsPerSync = m.syncs.perSync(m.e.syncsNow(context.WithoutCancel(ctx)))
}

// selfCPU is the CPU, in seconds, this process used so far (user and
// system, every thread); nil if it cannot be read.
func selfCPU() *float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return nil
	}
	v := float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
	return &v
}

// cpuNow reads, in seconds, the CPU used by the broker and by the
// processes of DBPIDs; nil for a side with no figure. The broker's is
// that of ServerPIDs and their children when they are given, else the
// sum of every node's process_cpu_seconds_total; a node that does not
// answer leaves the figure out: a sum without it would flatter the broker.
func (e *env) cpuNow(ctx context.Context) (server, db *float64) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if len(e.cfg.ServerPIDs) > 0 {
		server = e.pidsCPU("server", e.cfg.ServerPIDs)
	} else if len(e.cfg.Endpoints) > 0 {
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
		db = e.pidsCPU("database", e.cfg.DBPIDs)
	}
	return server, db
}

// pidsCPU is the CPU, in seconds, of pids and their children; nil, with a
// note, if one cannot be read.
func (e *env) pidsCPU(side string, pids []int) *float64 {
	var sum float64
	for _, pid := range pids {
		v, err := treeCPU(pid)
		if err != nil {
			e.note("%s CPU: %v", side, err)
			return nil
		}
		sum += v
	}
	return &sum
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

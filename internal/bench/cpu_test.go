package bench

import (
	"os"
	"os/exec"
	"runtime"
	"sync"
	"testing"
)

func TestParseStat(t *testing.T) {
	cases := []struct {
		name string
		line string
		want stat
		bad  bool
	}{
		{"postgres backend", "4242 (postgres) S 4200 4200 4200 0 -1 4194560 1021 0 0 0 37 12 3 4 20 0 1 0 880 227000000 3000 18446744073709551615\n",
			stat{ppid: 4200, utime: 37, stime: 12, cutime: 3, cstime: 4}, false},
		{"command with spaces and parentheses", "7 (a (b) c) R 1 7 7 0 -1 0 0 0 0 0 5 6 7 8 20 0 1 0 1 1 1",
			stat{ppid: 1, utime: 5, stime: 6, cutime: 7, cstime: 8}, false},
		{"cut short", "7 (x) R 1 7 7 0 -1 0 0 0 0 0 5 6", stat{}, true},
		{"no command", "7 x R 1", stat{}, true},
		{"not a number", "7 (x) R 1 7 7 0 -1 0 0 0 0 0 5 six 7 8 20", stat{}, true},
	}
	for _, tc := range cases {
		got, err := parseStat(tc.line)
		if (err != nil) != tc.bad || (!tc.bad && got != tc.want) {
			t.Errorf("%s: %+v, %v; want %+v (error %v)", tc.name, got, err, tc.want, tc.bad)
		}
	}
}

// TestTreeCPU reads this test's own process, which has used some CPU by
// now, and a process that does not exist.
func TestTreeCPU(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	// Burn a little CPU so that at least one clock tick is counted.
	x := 0
	for i := range 20_000_000 {
		x ^= i
	}
	_ = x
	v, err := treeCPU(os.Getpid())
	if err != nil || v <= 0 {
		t.Errorf("own process: %v, %v", v, err)
	}
	if _, err := treeCPU(1 << 30); err == nil {
		t.Error("a process that does not exist was read")
	}
}

// TestTreeCPUNeverFalls reads this process's tree while children that
// use CPU start, end and are reaped: the figure only grows. A child
// reaped in the middle of a read once fell out of it, making a scenario's
// database CPU come out below zero.
func TestTreeCPUNeverFalls(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	var wg sync.WaitGroup
	done := make(chan struct{})
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 8 {
				// About 100 ms of CPU each, then the child ends and is reaped.
				cmd := exec.Command(sh, "-c", "i=0; while [ $i -lt 60000 ]; do i=$((i+1)); done")
				if err := cmd.Run(); err != nil {
					t.Errorf("child: %v", err)
					return
				}
			}
		}()
	}
	go func() { wg.Wait(); close(done) }()
	prev := 0.0
	for reads := 0; ; reads++ {
		select {
		case <-done:
			if reads == 0 {
				t.Error("no read while the children ran")
			}
			return
		default:
		}
		v, err := treeCPU(os.Getpid())
		if err != nil {
			t.Fatalf("read %d: %v", reads, err)
		}
		if v < prev {
			t.Fatalf("read %d: %.2f s after %.2f s", reads, v, prev)
		}
		prev = v
	}
}

package embedded

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/testwait"
)

// dlqCrashEnv makes TestDLQCrashChild run as a load generator: its value is
// "redrive:DIR" or "task:DIR".
const dlqCrashEnv = "FERRY_EMBEDDED_DLQ_CRASH"

// crashTaskMessages is how many messages the crashed move task moves.
const crashTaskMessages = 3000

// TestDLQCrashChild runs until it is killed. In redrive mode, two queues
// that are each other's dead-letter queue (maxReceiveCount 1) take sends
// and receives, so every message keeps moving between them; it prints
// "S id" for every acknowledged send. In task mode, it fills a dead-letter
// queue once, starts a move task without a rate limit, and prints "P moved"
// as the task goes ("E moved" once it has ended).
func TestDLQCrashChild(t *testing.T) {
	mode, dir, ok := strings.Cut(os.Getenv(dlqCrashEnv), ":")
	if !ok {
		t.Skip("run by TestDLQCrash")
	}
	ctx := context.Background()
	die := func(what string, err error) {
		fmt.Fprintln(os.Stderr, what+":", err)
		os.Exit(2)
	}
	e, err := Open(ctx, Options{Dir: dir, HoldMoveTasks: true})
	if err != nil {
		die("open", err)
	}
	var out sync.Mutex
	emit := func(line string) {
		out.Lock()
		defer out.Unlock()
		os.Stdout.WriteString(line + "\n")
	}
	switch mode {
	case "redrive":
		for _, q := range []engine.Queue{
			{Account: acct, Name: "a", ARN: arn("a"), Settings: redriveTo("b", 1)},
			{Account: acct, Name: "b", ARN: arn("b"), Settings: redriveTo("a", 1)},
		} {
			if _, _, err := e.CreateQueue(ctx, q); err != nil {
				die("create", err)
			}
		}
		zero := time.Duration(0)
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					name := []string{"a", "b"}[(w+i)%2]
					msgs := make([]engine.NewMessage, 3)
					for j := range msgs {
						msgs[j] = engine.NewMessage{Body: fmt.Sprint(w, "-", i, "-", j)}
					}
					res, err := e.Send(ctx, acct, name, msgs)
					if err != nil {
						die("send", err)
					}
					for _, r := range res {
						emit("S " + r.MessageID)
					}
					for _, q := range []string{"a", "b"} {
						if _, err := e.Receive(ctx, acct, q, engine.ReceiveRequest{Max: 10, Visibility: &zero}); err != nil {
							die("receive", err)
						}
					}
				}
			}()
		}
		wg.Wait()
	case "task":
		for _, name := range []string{"dlq", "dst"} {
			if _, _, err := e.CreateQueue(ctx, engine.Queue{Account: acct, Name: name, ARN: arn(name), Settings: settings()}); err != nil {
				die("create", err)
			}
		}
		ts, err := e.ListMoveTasks(ctx, acct, "dlq")
		if err != nil {
			die("list", err)
		}
		// Progress is told by the move hook, as each move is durable; the
		// store holds a resumed task until the hook is in place.
		var moved, left int64 = 0, crashTaskMessages
		if len(ts) > 0 {
			moved, left = ts[0].Moved, ts[0].ToMove-ts[0].Moved
		}
		allMoved := make(chan struct{})
		var n atomic.Int64
		e.OnMovedByTask(func(string, string, *engine.NewMessage) {
			i := n.Add(1)
			emit("P " + strconv.FormatInt(moved+i, 10))
			if i == left {
				close(allMoved)
			}
		})
		switch {
		case len(ts) == 0:
			sendBodies(t, e, "dlq", crashTaskMessages)
			if _, err := e.StartMoveTask(ctx, engine.MoveTask{SourceAccount: acct, SourceName: "dlq", DestinationARN: arn("dst")}); err != nil {
				die("start", err)
			}
		case left == 0:
			close(allMoved)
		}
		<-allMoved
		// The task's end is written after its last move, and shows only
		// once durable: the kill that follows must not take it back.
		testwait.Eventually(t, "the task to end", func() bool {
			ts, err := e.ListMoveTasks(ctx, acct, "dlq")
			if err != nil {
				die("list", err)
			}
			return !ts[0].Status.Active()
		})
		emit("E " + strconv.FormatInt(moved+n.Load(), 10))
		select {} // until killed
	}
}

// runDLQChild runs the load generator until stop says so, kills it with
// SIGKILL and returns the lines it wrote.
func runDLQChild(t *testing.T, mode, dir string, stop func(line string) bool) []string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestDLQCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), dlqCrashEnv+"="+mode+":"+dir)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.AfterFunc(60*time.Second, func() { _ = cmd.Process.Kill() })
	defer deadline.Stop()
	killed := false
	var lines []string
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if !killed && stop(sc.Text()) {
			killed = true
			_ = cmd.Process.Kill() // SIGKILL: no deferred code, no Close
		}
	}
	err = cmd.Wait()
	if !killed {
		t.Fatalf("load generator ended by itself: %v\n%s", err, stderr.String())
	}
	return lines
}

// Dead-letter moves on receive, killed at random points: every
// acknowledged message is in exactly one of the two queues.
func TestDLQCrashRedrive(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	dir := t.TempDir()
	sent := map[string]bool{}
	totalMoved := 0
	for round := range 3 {
		n := 0
		for _, l := range runDLQChild(t, "redrive", dir, func(l string) bool {
			if strings.HasPrefix(l, "S ") {
				n++
			}
			return n >= 600
		}) {
			if id, ok := strings.CutPrefix(l, "S "); ok {
				sent[id] = true
			}
		}
		e := openTest(t, Options{Dir: dir, Clock: clock.NewFake(time.Now())})
		a, b := storedMessageIDs(t, e, "a"), storedMessageIDs(t, e, "b")
		for id := range a {
			if b[id] {
				t.Fatalf("round %d: message %s in both queues", round, id)
			}
		}
		for id := range sent {
			if !a[id] && !b[id] {
				t.Fatalf("round %d: acknowledged message %s lost", round, id)
			}
		}
		moved := 0
		for _, name := range []string{"a", "b"} {
			q, _ := e.lookup(acct, name)
			q.mu.Lock()
			for _, m := range q.msgs {
				if m.receiveCount > 0 && m.gen == 0 {
					moved++ // a moved message not received since
				}
			}
			q.mu.Unlock()
		}
		t.Logf("round %d: %d sent, %d in a, %d in b, %d just moved", round, len(sent), len(a), len(b), moved)
		totalMoved += moved
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// The kills fell among moves: the test exercised what it claims to.
	if totalMoved == 0 {
		t.Fatal("no message was ever moved")
	}
}

// rawCrashState reads, without opening the engine (which would resume the
// task), the bodies in each queue and the task record.
func rawCrashState(t *testing.T, dir string) (bodies map[string]map[string]int, task engine.MoveTask) {
	t.Helper()
	db, err := pebble.Open(dir, &pebble.Options{Logger: newPebbleLogger(slog.New(slog.DiscardHandler), clock.Real{})})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	names := map[uint64]string{}
	bodies = map[string]map[string]int{}
	it, err := db.NewIter(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	tasks := 0
	for valid := it.First(); valid; valid = it.Next() {
		k := it.Key()
		switch k[0] {
		case prefixQueue:
			q, err := decodeQueue(it.Value())
			if err != nil {
				t.Fatal(err)
			}
			names[binary.BigEndian.Uint64(k[1:])] = q.Name
			bodies[q.Name] = map[string]int{}
		case prefixMsg:
			qid, _, kind, ok := parseMsgKey(k)
			if !ok || kind != kindBody {
				continue
			}
			var m engine.Message
			if err := decodeMessage(it.Value(), &m); err != nil {
				t.Fatal(err)
			}
			bodies[names[qid]][m.Body]++
		case prefixTask:
			if task, err = decodeTask(it.Value()); err != nil {
				t.Fatal(err)
			}
			tasks++
		}
	}
	if tasks != 1 {
		t.Fatalf("%d task records", tasks)
	}
	return bodies, task
}

// A move task killed mid-run, resumed and killed again: every message is
// in exactly one queue, the task's Moved count is exactly what the
// destination holds, and it completes.
func TestDLQCrashMoveTask(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	dir := t.TempDir()
	last := int64(0)
	for round := range 3 {
		from := last
		runDLQChild(t, "task", dir, func(l string) bool {
			kind, v, _ := strings.Cut(l, " ")
			n, _ := strconv.ParseInt(v, 10, 64)
			// Kill mid-run twice, then once the task has ended.
			return kind == "E" || (round < 2 && n >= from+800)
		})
		bodies, task := rawCrashState(t, dir)
		for i := range crashTaskMessages {
			b := fmt.Sprint("m-", i)
			if n := bodies["dlq"][b] + bodies["dst"][b]; n != 1 {
				t.Fatalf("round %d: %s is in %d queues (dlq %d, dst %d)", round, b, n, bodies["dlq"][b], bodies["dst"][b])
			}
		}
		if len(bodies["dlq"])+len(bodies["dst"]) != crashTaskMessages {
			t.Fatalf("round %d: %d + %d messages", round, len(bodies["dlq"]), len(bodies["dst"]))
		}
		if task.ToMove != crashTaskMessages || task.Moved != int64(len(bodies["dst"])) || task.Moved < last {
			t.Fatalf("round %d: task %+v, destination holds %d (moved %d before)", round, task, len(bodies["dst"]), last)
		}
		t.Logf("round %d: task %s, %d moved", round, task.Status, task.Moved)
		last = task.Moved
		if round == 2 && (task.Status != engine.MoveTaskCompleted || task.Moved != crashTaskMessages) {
			t.Fatalf("after the last round: %+v", task)
		}
	}
}

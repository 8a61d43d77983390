package embedded

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/engine"
)

// crashDirEnv makes TestCrashChild run as the load generator of
// TestCrashRecovery.
const crashDirEnv = "FERRY_EMBEDDED_CRASH_DIR"

// TestCrashChild sends and deletes until it is killed, printing "S id" for
// every acknowledged send, "T id" before trying a delete and "D id" for every
// acknowledged delete.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(crashDirEnv)
	if dir == "" {
		t.Skip("run by TestCrashRecovery")
	}
	ctx := context.Background()
	e, err := Open(ctx, Options{Dir: dir})
	if err != nil {
		fmt.Fprintln(os.Stderr, "open:", err)
		os.Exit(2)
	}
	s := settings()
	s.Retention = 14 * 24 * time.Hour
	if _, _, err := e.CreateQueue(ctx, engine.Queue{Account: acct, Name: "q", Settings: s}); err != nil {
		fmt.Fprintln(os.Stderr, "create:", err)
		os.Exit(2)
	}
	// One write per line keeps lines whole on the pipe.
	var out sync.Mutex
	emit := func(kind, id string) {
		out.Lock()
		defer out.Unlock()
		os.Stdout.WriteString(kind + " " + id + "\n")
	}
	hour := time.Hour
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				msgs := make([]engine.NewMessage, 5)
				for j := range msgs {
					msgs[j] = engine.NewMessage{Body: fmt.Sprint(w, "-", i, "-", j)}
				}
				res, err := e.Send(ctx, acct, "q", msgs)
				if err != nil {
					fmt.Fprintln(os.Stderr, "send:", err)
					os.Exit(2)
				}
				for _, r := range res {
					emit("S", r.MessageID)
				}
				got, err := e.Receive(ctx, acct, "q", engine.ReceiveRequest{Max: 4, Visibility: &hour})
				if err != nil {
					fmt.Fprintln(os.Stderr, "receive:", err)
					os.Exit(2)
				}
				var handles, ids []string
				for k, m := range got {
					if k%2 == 0 {
						handles = append(handles, m.ReceiptHandle)
						ids = append(ids, m.MessageID)
					}
				}
				for _, id := range ids {
					emit("T", id)
				}
				errs, err := e.Delete(ctx, acct, "q", handles)
				if err != nil {
					fmt.Fprintln(os.Stderr, "delete:", err)
					os.Exit(2)
				}
				for k, id := range ids {
					if errs[k] == nil {
						emit("D", id)
					}
				}
			}
		}()
	}
	wg.Wait()
}

func TestCrashRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	dir := t.TempDir()
	log := crashLog{sent: map[string]bool{}, tried: map[string]bool{}, deleted: map[string]bool{}}
	sent, deleted := log.sent, log.deleted
	for round := range 3 {
		runCrashChild(t, dir, "TestCrashChild", 400+round*300, log)
		if path, size := walSize(t, dir); size < walPresize {
			t.Fatalf("round %d: the killed writer's log %s is %d bytes, want it preallocated to %d", round, path, size, walPresize)
		}

		logs := &logCapture{}
		// A killed process leaves whole records in its log: recovery drops
		// nothing, must not say it did, and strict recovery starts.
		e := openTest(t, Options{Dir: dir, Clock: clock.NewFake(time.Now()), Logger: slog.New(logs), StrictRecovery: true})
		if w := logs.walWarnings(); len(w) != 0 {
			t.Fatalf("round %d: recovery after a kill warned %v", round, w)
		}
		present := storedMessageIDs(t, e, "q")
		for id := range deleted {
			if present[id] {
				t.Fatalf("round %d: acknowledged delete of %s came back", round, id)
			}
		}
		// A delete under way when the child died may have happened.
		missing := 0
		for id := range sent {
			if !log.tried[id] && !present[id] {
				missing++
			}
		}
		if missing > 0 {
			t.Fatalf("round %d: %d acknowledged sends lost (%d sent, %d deleted, %d present)", round, missing, len(sent), len(deleted), len(present))
		}
		t.Logf("round %d: %d sends and %d deletes acknowledged, %d messages stored", round, len(sent), len(deleted), len(present))
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

type crashLog struct {
	sent, tried, deleted map[string]bool
	bodies               map[string]string // by id, when the child prints them
}

// runCrashChild runs the load generator until it has acknowledged at least
// minOps operations, kills it with SIGKILL and records every line it wrote.
func runCrashChild(t *testing.T, dir, child string, minOps int, log crashLog) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+child+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashDirEnv+"="+dir)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	deadline := time.AfterFunc(60*time.Second, func() { _ = cmd.Process.Kill() })
	defer deadline.Stop()
	ops := 0
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		kind, id, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		switch kind {
		case "S":
			id, body, _ := strings.Cut(id, " ")
			log.sent[id] = true
			if log.bodies != nil {
				log.bodies[id] = body
			}
		case "T":
			log.tried[id] = true
			continue
		case "D":
			log.deleted[id] = true
		default:
			continue
		}
		if ops++; ops == minOps && !killed {
			killed = true
			_ = cmd.Process.Kill() // SIGKILL: no deferred code, no Close
		}
	}
	err = cmd.Wait()
	if !killed {
		t.Fatalf("load generator ended by itself after %d ops: %v\n%s", ops, err, stderr.String())
	}
	if ops < minOps {
		t.Fatalf("load generator acknowledged only %d ops: %s", ops, stderr.String())
	}
}

// walSize returns the path and size of dir's newest log.
func walSize(t *testing.T, dir string) (string, int64) {
	t.Helper()
	path, _, _ := newestWAL(t, dir)
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, st.Size()
}

// storedMessageIDs lists the ids of a queue's messages, checking that the
// index and the store agree.
func storedMessageIDs(t *testing.T, e *Engine, name string) map[string]bool {
	t.Helper()
	q, err := e.lookup(acct, name)
	if err != nil {
		t.Fatal(err)
	}
	q.mu.Lock()
	seqs := make([]uint64, 0, len(q.msgs))
	for seq := range q.msgs {
		seqs = append(seqs, seq)
	}
	q.mu.Unlock()
	ids := make(map[string]bool, len(seqs))
	for _, seq := range seqs {
		v, err := q.body(seq)
		if err != nil || v == nil {
			t.Fatalf("indexed message %d has no record: %v", seq, err)
		}
		var m engine.Message
		if err := decodeMessage(v, &m); err != nil {
			t.Fatal(err)
		}
		ids[m.MessageID] = true
	}
	bodies := tableRecords(q)
	lo, hi := queueMsgSpan(q.id)
	if err := e.scan(lo, hi, func(it *pebble.Iterator) (bool, error) {
		if it.Key()[17] == kindBody {
			bodies++
		}
		return false, nil
	}); err != nil {
		t.Fatal(err)
	}
	if bodies != len(ids) {
		t.Fatalf("%d message records in the store, %d in the index", bodies, len(ids))
	}
	return ids
}

// TestFIFOCrashChild is TestCrashChild on a FIFO queue: each worker sends
// to its own group (the body is the deduplication id), printing "S id
// body", and receives and deletes whatever it gets.
func TestFIFOCrashChild(t *testing.T) {
	dir := os.Getenv(crashDirEnv)
	if dir == "" {
		t.Skip("run by TestFIFOCrashRecovery")
	}
	ctx := context.Background()
	e, err := Open(ctx, Options{Dir: dir})
	if err != nil {
		fmt.Fprintln(os.Stderr, "open:", err)
		os.Exit(2)
	}
	s := settings()
	s.FIFO = true
	if _, _, err := e.CreateQueue(ctx, engine.Queue{Account: acct, Name: "q.fifo", Settings: s}); err != nil {
		fmt.Fprintln(os.Stderr, "create:", err)
		os.Exit(2)
	}
	var out sync.Mutex
	emit := func(line string) {
		out.Lock()
		defer out.Unlock()
		os.Stdout.WriteString(line + "\n")
	}
	run := time.Now().UnixNano() // bodies stay unique across rounds
	hour := time.Hour
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				msgs := make([]engine.NewMessage, 5)
				for j := range msgs {
					body := fmt.Sprintf("%d-%d-%06d-%d", run, w, i, j)
					msgs[j] = engine.NewMessage{Body: body, MessageGroupID: fmt.Sprint("g", w), DeduplicationID: body}
				}
				res, err := e.Send(ctx, acct, "q.fifo", msgs)
				if err != nil {
					fmt.Fprintln(os.Stderr, "send:", err)
					os.Exit(2)
				}
				for j, r := range res {
					emit("S " + r.MessageID + " " + msgs[j].Body)
				}
				got, err := e.Receive(ctx, acct, "q.fifo", engine.ReceiveRequest{Max: 4, Visibility: &hour})
				if err != nil {
					fmt.Fprintln(os.Stderr, "receive:", err)
					os.Exit(2)
				}
				handles := make([]string, len(got))
				for k, m := range got {
					handles[k] = m.ReceiptHandle
					emit("T " + m.MessageID)
				}
				errs, err := e.Delete(ctx, acct, "q.fifo", handles)
				if err != nil {
					fmt.Fprintln(os.Stderr, "delete:", err)
					os.Exit(2)
				}
				for k, m := range got {
					if errs[k] == nil {
						emit("D " + m.MessageID)
					}
				}
			}
		}()
	}
	wg.Wait()
}

// TestFIFOCrashRecovery kills a FIFO load generator and checks, after each
// restart, that no acknowledged send is lost, no acknowledged delete comes
// back, each group is still in send order, and every acknowledged send
// still deduplicates (its entry was in the same batch as its message).
func TestFIFOCrashRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	dir := t.TempDir()
	log := crashLog{sent: map[string]bool{}, tried: map[string]bool{}, deleted: map[string]bool{}, bodies: map[string]string{}}
	for round := range 2 {
		runCrashChild(t, dir, "TestFIFOCrashChild", 400+round*300, log)

		e := openTest(t, Options{Dir: dir, Clock: clock.NewFake(time.Now())})
		present := storedMessageIDs(t, e, "q.fifo")
		for id := range log.deleted {
			if present[id] {
				t.Fatalf("round %d: acknowledged delete of %s came back", round, id)
			}
		}
		for id := range log.sent {
			if !log.tried[id] && !present[id] {
				t.Fatalf("round %d: acknowledged send %s lost", round, id)
			}
			body := log.bodies[id]
			g, _, _ := strings.Cut(body[strings.IndexByte(body, '-')+1:], "-")
			res, err := e.Send(context.Background(), acct, "q.fifo", []engine.NewMessage{{Body: body, MessageGroupID: "g" + g, DeduplicationID: body}})
			if err != nil || !res[0].Duplicate || res[0].MessageID != id {
				t.Fatalf("round %d: resend of acknowledged %s (%s) = %+v, %v", round, id, body, res, err)
			}
		}
		// Each group's list is in send order (bodies sort so).
		q, _ := e.lookup(acct, "q.fifo")
		q.mu.Lock()
		lists := map[string][]uint64{}
		for id, g := range q.groups.groups {
			for m := g.head; m != nil; m = m.next {
				lists[id] = append(lists[id], m.seq)
			}
		}
		q.mu.Unlock()
		for gid, seqs := range lists {
			last := ""
			for _, seq := range seqs {
				k := makeMsgKey(q.id, seq, kindBody)
				v, err := e.get(k[:])
				var m engine.Message
				if err != nil || v == nil || decodeMessage(v, &m) != nil {
					t.Fatalf("round %d: message %d of %s unreadable: %v", round, seq, gid, err)
				}
				if m.Body <= last || m.MessageGroupID != gid {
					t.Fatalf("round %d: %s (group %s) after %s in %s", round, m.Body, m.MessageGroupID, last, gid)
				}
				last = m.Body
			}
		}
		checkIndexes(t, e)
		t.Logf("round %d: %d sends and %d deletes acknowledged, %d messages stored", round, len(log.sent), len(log.deleted), len(present))
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

package sns

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/engine/embedded"
)

// TestFanoutIsOneDurableWrite publishes to a topic whose SQS
// subscriptions all lead to standard queues (raw, enveloped, filtered)
// on an on-disk store that fsyncs, and counts the fsyncs of the store's
// write-ahead log: a Publish to all of them, and a PublishBatch of ten,
// must each be one durable write. Every copy is then received, so that
// the count is of writes that happened.
func TestFanoutIsOneDurableWrite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fs := &walSyncs{FS: vfs.Default}
	raw := map[string]string{"RawMessageDelivery": "true"}
	subs := []map[string]string{raw, nil, raw, {"RawMessageDelivery": "true", "FilterPolicy": `{"kind":["order"]}`}, raw, nil}
	s, eng, topicARN, _ := newFanoutFixtureWith(t, embedded.Options{Dir: t.TempDir(), FS: fs}, subs)
	kind := "order"
	attrs := map[string]messageAttributeValue{"kind": {DataType: "String", StringValue: &kind}}

	before := fs.n.Load()
	if _, err := s.publish(ctx, &publishInput{TopicArn: topicARN, Message: "one", MessageAttributes: attrs}); err != nil {
		t.Fatal(err)
	}
	if n := fs.n.Load() - before; n != 1 {
		t.Errorf("Publish to %d subscriptions: %d fsyncs of the log, want 1", len(subs), n)
	}

	entries := make([]publishBatchEntry, 10)
	for i := range entries {
		entries[i] = publishBatchEntry{Id: fmt.Sprint(i), Message: fmt.Sprint("batch ", i), MessageAttributes: attrs}
	}
	before = fs.n.Load()
	out, err := s.publishBatch(ctx, &publishBatchInput{TopicArn: topicARN, PublishBatchRequestEntries: entries})
	if err != nil || len(out.Successful) != len(entries) {
		t.Fatalf("PublishBatch: %+v, %v", out, err)
	}
	if n := fs.n.Load() - before; n != 1 {
		t.Errorf("PublishBatch of %d to %d subscriptions: %d fsyncs of the log, want 1", len(entries), len(subs), n)
	}

	// Received ones stay hidden, so that each copy is counted once.
	hide := time.Hour
	for i := range subs {
		seen := map[string]bool{}
		for {
			msgs, err := eng.Receive(ctx, DefaultAccount, fmt.Sprintf("q%d", i), engine.ReceiveRequest{Max: 10, Visibility: &hide})
			if err != nil {
				t.Fatal(err)
			}
			if len(msgs) == 0 {
				break
			}
			for _, m := range msgs {
				seen[m.MessageID] = true
			}
		}
		if len(seen) != 1+len(entries) {
			t.Errorf("q%d holds %d copies, want %d", i, len(seen), 1+len(entries))
		}
	}
}

// walSyncs is a filesystem that counts the syncs of write-ahead log
// files (Pebble's *.log), however they are asked for.
type walSyncs struct {
	vfs.FS
	n atomic.Int64
}

func (w *walSyncs) wrap(name string, f vfs.File, err error) (vfs.File, error) {
	if err != nil || !strings.HasSuffix(name, ".log") {
		return f, err
	}
	return &walFile{File: f, n: &w.n}, nil
}

func (w *walSyncs) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := w.FS.Create(name, category)
	return w.wrap(name, f, err)
}

func (w *walSyncs) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := w.FS.ReuseForWrite(oldname, newname, category)
	return w.wrap(newname, f, err)
}

func (w *walSyncs) OpenReadWrite(name string, category vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := w.FS.OpenReadWrite(name, category, opts...)
	return w.wrap(name, f, err)
}

type walFile struct {
	vfs.File
	n *atomic.Int64
}

func (f *walFile) Sync() error {
	f.n.Add(1)
	return f.File.Sync()
}

func (f *walFile) SyncData() error {
	f.n.Add(1)
	return f.File.SyncData()
}

func (f *walFile) SyncTo(length int64) (bool, error) {
	f.n.Add(1)
	return f.File.SyncTo(length)
}

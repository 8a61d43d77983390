package embedded

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/cockroachdb/pebble/v2"

	"github.com/ferrymq/ferry/internal/engine"
)

// Records live under prefixRecord kind 0x00 key; kinds and keys are
// strings that never hold a NUL byte.
const prefixRecord byte = 0x05

func recordKey(kind, key string) []byte {
	k := make([]byte, 0, 2+len(kind)+len(key))
	k = append(k, prefixRecord)
	k = append(k, kind...)
	k = append(k, 0)
	return append(k, key...)
}

func checkRecordNames(kind, key string) error {
	if kind == "" || strings.IndexByte(kind, 0) >= 0 || strings.IndexByte(key, 0) >= 0 {
		return fmt.Errorf("embedded: bad record name %q/%q", kind, key)
	}
	return nil
}

// PutRecord implements engine.RecordStore.
func (e *Engine) PutRecord(ctx context.Context, kind, key string, value []byte) error {
	if err := checkRecordNames(kind, key); err != nil {
		return err
	}
	if err := e.enter(); err != nil {
		return err
	}
	defer e.leave()
	if err := e.writable(); err != nil {
		return err
	}
	e.recordMu.Lock()
	defer e.recordMu.Unlock()
	if err := e.db.Set(recordKey(kind, key), value, e.writeOptions()); err != nil {
		return fmt.Errorf("embedded: put record: %w", err)
	}
	return nil
}

// DeleteRecord implements engine.RecordStore.
func (e *Engine) DeleteRecord(ctx context.Context, kind, key string) error {
	if err := checkRecordNames(kind, key); err != nil {
		return err
	}
	if err := e.enter(); err != nil {
		return err
	}
	defer e.leave()
	if err := e.writable(); err != nil {
		return err
	}
	e.recordMu.Lock()
	defer e.recordMu.Unlock()
	if err := e.db.Delete(recordKey(kind, key), e.writeOptions()); err != nil {
		return fmt.Errorf("embedded: delete record: %w", err)
	}
	return nil
}

// InsertRecord implements engine.RecordStore.
func (e *Engine) InsertRecord(ctx context.Context, kind, key string, value []byte) (bool, error) {
	return e.writeRecordIf(kind, key, func(_ []byte, found bool) bool { return !found }, value, false)
}

// SwapRecord implements engine.RecordStore.
func (e *Engine) SwapRecord(ctx context.Context, kind, key string, old, value []byte) (bool, error) {
	return e.writeRecordIf(kind, key, func(cur []byte, found bool) bool { return found && bytes.Equal(cur, old) }, value, false)
}

// DeleteRecordIf implements engine.RecordStore.
func (e *Engine) DeleteRecordIf(ctx context.Context, kind, key string, old []byte) (bool, error) {
	return e.writeRecordIf(kind, key, func(cur []byte, found bool) bool { return found && bytes.Equal(cur, old) }, nil, true)
}

// writeRecordIf puts value as kind/key, or deletes it, if cond holds of
// the record as it is. The check and the write happen under recordMu,
// which every record write takes, held until the write is durable, so
// that no other write comes between them. Records are written rarely, so
// the writes of records giving up group commit among themselves costs
// nothing that matters.
func (e *Engine) writeRecordIf(kind, key string, cond func(cur []byte, found bool) bool, value []byte, del bool) (bool, error) {
	if err := checkRecordNames(kind, key); err != nil {
		return false, err
	}
	if err := e.enter(); err != nil {
		return false, err
	}
	defer e.leave()
	if err := e.writable(); err != nil {
		return false, err
	}
	e.recordMu.Lock()
	defer e.recordMu.Unlock()
	k := recordKey(kind, key)
	cur, closer, err := e.db.Get(k)
	found := err == nil
	switch {
	case errors.Is(err, pebble.ErrNotFound):
	case err != nil:
		return false, fmt.Errorf("embedded: read record: %w", err)
	}
	ok := cond(cur, found)
	if found {
		closer.Close()
	}
	if !ok {
		return false, nil
	}
	if del {
		err = e.db.Delete(k, e.writeOptions())
	} else {
		err = e.db.Set(k, value, e.writeOptions())
	}
	if err != nil {
		return false, fmt.Errorf("embedded: write record: %w", err)
	}
	return true, nil
}

// Records implements engine.RecordStore.
func (e *Engine) Records(ctx context.Context, kind string) ([]engine.Record, error) {
	if err := checkRecordNames(kind, ""); err != nil {
		return nil, err
	}
	if err := e.enter(); err != nil {
		return nil, err
	}
	defer e.leave()
	lo := recordKey(kind, "")
	hi := append(append([]byte{}, lo[:len(lo)-1]...), 1)
	it, err := e.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return nil, fmt.Errorf("embedded: records: %w", err)
	}
	defer it.Close()
	var out []engine.Record
	for it.First(); it.Valid(); it.Next() {
		out = append(out, engine.Record{Key: string(it.Key()[len(lo):]), Value: append([]byte(nil), it.Value()...)})
	}
	if err := it.Error(); err != nil {
		return nil, fmt.Errorf("embedded: records: %w", err)
	}
	return out, nil
}

// GetRecord implements engine.RecordStore.
func (e *Engine) GetRecord(ctx context.Context, kind, key string) ([]byte, bool, error) {
	if err := checkRecordNames(kind, key); err != nil {
		return nil, false, err
	}
	if err := e.enter(); err != nil {
		return nil, false, err
	}
	defer e.leave()
	v, closer, err := e.db.Get(recordKey(kind, key))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("embedded: get record: %w", err)
	}
	defer closer.Close()
	return append([]byte{}, v...), true, nil
}

var _ engine.RecordStore = (*Engine)(nil)

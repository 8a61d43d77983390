package embedded

import (
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
	if err := e.db.Delete(recordKey(kind, key), e.writeOptions()); err != nil {
		return fmt.Errorf("embedded: delete record: %w", err)
	}
	return nil
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

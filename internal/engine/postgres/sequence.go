package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ferrymq/ferry/internal/engine"
)

// sequenceSQL takes the numbers of a call to Sequence in one statement:
// $1 the sequence, $2 and $3 the claims' keys and ids, $4 now in
// microseconds, $5 the number of claims, $6 when the keys expire and $7
// now, in nanoseconds.
//
// The upsert of the sequence's row comes first (the key rows' insert
// reads its result), so that the publishes of one topic, on every node,
// take their numbers one after the other: a second waits for the first's
// commit and then sees its last number. It numbers every claim; a
// duplicate's number is never used (a gap). A key is then inserted, or,
// if it is there, updated from the row as it is committed now, whatever
// the statement's snapshot: an expired key is taken over, a live one is
// kept and returned, so that the claim is answered with the original's
// id and number. A claim is a duplicate when the id returned is not its
// own (ids are UUIDs).
const sequenceSQL = `
	WITH c AS (
		SELECT key, id, i FROM unnest($2::text[], $3::text[]) WITH ORDINALITY AS c(key, id, i)
	), s AS (
		INSERT INTO sequences AS s (name, last) VALUES ($1, $4::int8 * 1000000::numeric + $5::int8 - 1)
		ON CONFLICT (name) DO UPDATE SET last = greatest(s.last + $5::int8, $4::int8 * 1000000::numeric + $5::int8 - 1)
		RETURNING last - $5::int8 AS base
	), k AS (
		INSERT INTO sequence_keys AS k (name, key, message_id, number, expires_ns)
		SELECT $1, c.key, c.id, s.base + c.i, $6::int8 FROM c, s ORDER BY c.i
		ON CONFLICT (name, key) DO UPDATE SET
			message_id = CASE WHEN k.expires_ns <= $7::int8 THEN excluded.message_id ELSE k.message_id END,
			number = CASE WHEN k.expires_ns <= $7::int8 THEN excluded.number ELSE k.number END,
			expires_ns = CASE WHEN k.expires_ns <= $7::int8 THEN excluded.expires_ns ELSE k.expires_ns END
		RETURNING k.key, k.message_id, k.number
	)
	SELECT k.message_id, k.number::text FROM c JOIN k ON k.key = c.key ORDER BY c.i`

// Sequence implements engine.Sequencer: one round trip.
func (s *Store) Sequence(ctx context.Context, name string, now time.Time, claims []engine.SequenceClaim) ([]engine.SequenceTicket, error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.leave()
	if len(claims) == 0 {
		return nil, nil
	}
	keys, ids := make([]string, len(claims)), make([]string, len(claims))
	for i, c := range claims {
		keys[i], ids[i] = c.Key, c.ID
	}
	rows, err := s.pool.Query(ctx, sequenceSQL, name, keys, ids, now.UnixMicro(), len(claims),
		now.Add(engine.DeduplicationWindow).UnixNano(), now.UnixNano())
	if err != nil {
		return nil, fmt.Errorf("postgres: sequence %s: %w", name, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (engine.SequenceTicket, error) {
		var t engine.SequenceTicket
		err := r.Scan(&t.ID, &t.Number)
		return t, err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: sequence %s: %w", name, err)
	}
	if len(out) != len(claims) {
		return nil, fmt.Errorf("postgres: sequence %s: %d tickets for %d claims (keys must be distinct)", name, len(out), len(claims))
	}
	for i := range out {
		out[i].Duplicate = out[i].ID != claims[i].ID
	}
	return out, nil
}

// ReleaseSequence implements engine.Sequencer.
func (s *Store) ReleaseSequence(ctx context.Context, name string, claims []engine.SequenceClaim) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	keys, ids := make([]string, len(claims)), make([]string, len(claims))
	for i, c := range claims {
		keys[i], ids[i] = c.Key, c.ID
	}
	if _, err := s.pool.Exec(ctx, `
		DELETE FROM sequence_keys k USING unnest($2::text[], $3::text[]) AS c(key, id)
		WHERE k.name = $1 AND k.key = c.key AND k.message_id = c.id`, name, keys, ids); err != nil {
		return fmt.Errorf("postgres: release sequence %s: %w", name, err)
	}
	return nil
}

// DropSequence implements engine.Sequencer. The sequence's row goes
// first, so that a publish that comes meanwhile waits on it; the keys go
// in the same statement.
func (s *Store) DropSequence(ctx context.Context, name string) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	if _, err := s.pool.Exec(ctx, `
		WITH s AS (DELETE FROM sequences WHERE name = $1 RETURNING name)
		DELETE FROM sequence_keys WHERE name = $1 AND EXISTS (SELECT 1 FROM s)`, name); err != nil {
		return fmt.Errorf("postgres: drop sequence %s: %w", name, err)
	}
	return nil
}

var _ engine.Sequencer = (*Store)(nil)

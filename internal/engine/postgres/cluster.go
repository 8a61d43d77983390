package postgres

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/uuidv4"
)

// What several nodes on one database share (engine.Cluster): leases in the
// leases table, secrets in the secrets table, news of changed records as
// notifications (recordNote, sent in the changing statement), and metric
// points kept per node.

// newNodeName names a node for as long as it runs: a random UUID.
func newNodeName() string {
	var id [16]byte
	_, _ = rand.Read(id[:])
	var node [uuidv4.Len]byte
	uuidv4.Encode(&node, id)
	return string(node[:])
}

// Shared implements engine.Cluster.
func (s *Store) Shared() bool { return true }

// TakeLease implements engine.Cluster.
func (s *Store) TakeLease(ctx context.Context, name string, d time.Duration) (bool, error) {
	if err := s.enter(); err != nil {
		return false, err
	}
	defer s.leave()
	return s.takeLease(ctx, "service:"+name, d)
}

// Secret implements engine.Cluster.
func (s *Store) Secret(ctx context.Context, name string, create func() ([]byte, error)) ([]byte, error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.leave()
	return s.secret(ctx, name, create)
}

// secret returns the shared secret of that name, creating it with create
// if no node has yet; every node then reads the same value. create runs
// only when the secret is missing (it may be costly, as an RSA key is).
func (s *Store) secret(ctx context.Context, name string, create func() ([]byte, error)) ([]byte, error) {
	var v []byte
	err := s.pool.QueryRow(ctx, `SELECT value FROM secrets WHERE name = $1`, name).Scan(&v)
	if err == nil {
		return v, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("postgres: secret %s: %w", name, err)
	}
	fresh, err := create()
	if err != nil {
		return nil, fmt.Errorf("postgres: make secret %s: %w", name, err)
	}
	// A node creating it at the same moment makes this statement's insert
	// wait and do nothing, and its snapshot miss that node's row: the next
	// statement sees it.
	for range 2 {
		err = s.pool.QueryRow(ctx, `
			WITH ins AS (
				INSERT INTO secrets (name, value) VALUES ($1, $2)
				ON CONFLICT (name) DO NOTHING RETURNING value)
			SELECT value FROM ins UNION ALL SELECT value FROM secrets WHERE name = $1`, name, fresh).Scan(&v)
		if !errors.Is(err, pgx.ErrNoRows) {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: secret %s: %w", name, err)
	}
	return v, nil
}

// randomSecret makes 32 random bytes.
func randomSecret() ([]byte, error) {
	b := make([]byte, 32)
	_, err := rand.Read(b)
	return b, err
}

// WatchRecords implements engine.Cluster: the hub calls fn with the
// notifications of other nodes' record changes, and with ("", "") when it
// listens again after losing its connection.
func (s *Store) WatchRecords(fn func(kind, key string)) { s.hub.watchRecords(fn) }

// maxNotePayload keeps a record note under PostgreSQL's 8000-byte limit on
// a notification's payload; a longer key is sent as "" (the whole kind).
const maxNotePayload = 7900

// recordNote is the payload telling the other nodes that kind/key changed:
// "rec:" node "/" the length of kind "/" kind key. The length, not a
// separator, ends the kind, since kinds and keys may hold any character.
func (s *Store) recordNote(kind, key string) string {
	p := "rec:" + s.node + "/" + strconv.Itoa(len(kind)) + "/" + kind
	if len(p)+len(key) > maxNotePayload {
		return p
	}
	return p + key
}

// parseRecordNote splits a record note's payload (without "rec:").
func parseRecordNote(p string) (node, kind, key string, ok bool) {
	node, rest, ok1 := strings.Cut(p, "/")
	n, rest, ok2 := strings.Cut(rest, "/")
	kl, err := strconv.Atoi(n)
	if !ok1 || !ok2 || err != nil || kl <= 0 || kl > len(rest) {
		return "", "", "", false
	}
	return node, rest[:kl], rest[kl:], true
}

// PeerMetricPoints implements engine.Cluster.
func (s *Store) PeerMetricPoints(ctx context.Context, from int64) ([]engine.MetricPoint, error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.leave()
	return s.metricPoints(ctx, from, &s.node)
}

var _ engine.Cluster = (*Store)(nil)

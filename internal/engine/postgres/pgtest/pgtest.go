// Package pgtest gives tests a PostgreSQL schema of their own. The tests
// that need one run only when FERRY_TEST_POSTGRES_URL names a database on a
// PostgreSQL server (15 or newer) they may create schemas in; .ci/postgres
// starts one.
package pgtest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// URL is FERRY_TEST_POSTGRES_URL; without it the test is skipped, saying
// why.
func URL(t testing.TB) string {
	t.Helper()
	url := os.Getenv("FERRY_TEST_POSTGRES_URL")
	if url == "" {
		t.Skip("FERRY_TEST_POSTGRES_URL is not set: the PostgreSQL tests need a server (see the README, .ci/postgres)")
	}
	return url
}

// Schema returns the URL and the name of a new schema, dropped when the
// test ends (after whatever the test opened on it is closed, cleanups
// running last first). Ferry creates the schema when it opens it.
func Schema(t testing.TB) (url, schema string) {
	t.Helper()
	url = URL(t)
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema = "test_" + hex.EncodeToString(b[:])
	t.Cleanup(func() { dropSchema(t, url, schema) })
	return url, schema
}

func dropSchema(t testing.TB, url, schema string) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Errorf("drop schema %s: %v", schema, err)
		return
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
		t.Errorf("drop schema %s: %v", schema, err)
	}
}

// Server is a PostgreSQL server of one test's own, which the test may stop
// as a crash does and start again; the server the other tests share must
// stay up. It is started with the repository's .ci/postgres, so it runs
// where FERRY_TEST_POSTGRES_URL is set (PostgreSQL is installed there). A
// commit returns once its WAL is written, so that a kill loses nothing
// committed, as on a production server.
type Server struct {
	t      testing.TB
	script string
	dir    string
	// URL names its database "ferry".
	URL string
}

// StartServer starts a server of the test's own, stopped and removed when
// the test ends.
func StartServer(t testing.TB) *Server {
	t.Helper()
	URL(t)
	script, err := ciScript()
	if err != nil {
		t.Skipf("no .ci/postgres to start a server of the test's own: %v", err)
	}
	// Not t.TempDir: when run as root the server runs as another user,
	// who must reach the directory, and t.TempDir's parent is private.
	dir, err := os.MkdirTemp("", "ferry-pg-")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{t: t, script: script, dir: dir}
	t.Cleanup(func() {
		_ = exec.Command(script, "stop", dir).Run()
		_ = os.RemoveAll(dir)
	})
	s.URL = strings.TrimSpace(s.run("start", "durable"))
	return s
}

// Kill stops the server at once, as a crash would: every connection is
// cut and nothing is checkpointed.
func (s *Server) Kill() { s.t.Helper(); s.run("kill") }

// Restart starts the killed server again, on the same data and address.
func (s *Server) Restart() { s.t.Helper(); s.run("restart") }

func (s *Server) run(cmd string, args ...string) string {
	s.t.Helper()
	var stderr strings.Builder
	c := exec.Command(s.script, append([]string{cmd, s.dir}, args...)...)
	c.Stderr = &stderr
	out, err := c.Output()
	if err != nil {
		s.t.Fatalf(".ci/postgres %s: %v: %s", cmd, err, stderr.String())
	}
	return string(out)
}

// ciScript finds .ci/postgres in the module's root, above the test's
// directory.
func ciScript() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			p := filepath.Join(dir, ".ci", "postgres")
			_, err := os.Stat(p)
			return p, err
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", errors.New("go.mod not found above the working directory")
		}
		dir = up
	}
}

// SchemaFor is Schema with a name that key chooses: every call with the
// same key, in one test, names the same schema, so that a test can stop a
// node and start another on what the first left (a restart).
func SchemaFor(t testing.TB, key string) (url, schema string) {
	t.Helper()
	url = URL(t)
	sum := sha256.Sum256([]byte(key))
	schema = "test_" + hex.EncodeToString(sum[:6])
	t.Cleanup(func() { dropSchema(t, url, schema) })
	return url, schema
}

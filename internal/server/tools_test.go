package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// outsideTool is a program outside Go that tests drive Ferry with: an AWS
// SDK of another language, or the AWS CLI. Where it cannot run, its tests
// skip and say why, unless CI (CI=true) or the tool's own variable
// requires them, as .ci/run does: then they fail.
type outsideTool struct {
	// require is the variable that makes the tool's tests mandatory.
	require string
	// install says how to install the tool.
	install string
	// problem says why the tool cannot run, or "" when it can.
	problem func(ctx context.Context) string
}

// debianCLI is the AWS CLI 2.9 from Debian's awscli package, which speaks
// the query protocol to SQS. Another aws on PATH is not used.
const debianCLI = "/usr/bin/aws"

// debianPython is Debian's Python, which imports Debian's python3-boto3.
const debianPython = "/usr/bin/python3"

// jsSDKDir is the npm project that pins the AWS SDK for JavaScript v3.
const jsSDKDir = "testdata/jssdk"

var (
	awsCLITool = outsideTool{
		require: "FERRY_REQUIRE_AWS_CLI",
		install: "install Debian's awscli (apt-get install awscli)",
		problem: func(ctx context.Context) string { return awsCLIProblem(ctx, debianCLI) },
	}
	jsSDKTool = outsideTool{
		require: "FERRY_REQUIRE_JS_SDK",
		install: "install Node.js and run npm ci --prefix internal/server/" + jsSDKDir + " (make test does, where npm is installed)",
		problem: func(ctx context.Context) string {
			node, _ := exec.LookPath("node")
			return jsSDKProblem(ctx, node, jsSDKDir)
		},
	}
	boto3Tool = outsideTool{
		require: "FERRY_REQUIRE_BOTO3",
		install: "install Debian's python3-boto3 (apt-get install python3-boto3)",
		problem: func(ctx context.Context) string { return boto3Problem(ctx, debianPython) },
	}
	celeryTool = outsideTool{
		require: "FERRY_REQUIRE_CELERY",
		install: "install Debian's python3-celery, python3-kombu, python3-boto3 and python3-pycurl (kombu's SQS transport needs the last two)",
		problem: func(ctx context.Context) string { return celeryProblem(ctx, debianPython) },
	}
)

// toolRequired tells whether the tests of the tool required by the
// variable named require must run rather than skip: in CI (which sets
// CI=true) or with require set. A value that reads as false (CI=false, 0)
// does not require them.
func toolRequired(getenv func(string) string, require string) bool {
	set := func(name string) bool {
		v := getenv(name)
		b, err := strconv.ParseBool(v)
		return v != "" && (err != nil || b)
	}
	return set("CI") || set(require)
}

// need skips t when the tool cannot run, or fails it when its tests are
// required.
func (o outsideTool) need(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	problem := o.problem(ctx)
	if problem == "" {
		return
	}
	if toolRequired(os.Getenv, o.require) {
		t.Fatalf("%s; CI=true or %s=1 require this test: %s", problem, o.require, o.install)
	}
	t.Skipf("%s; %s to run it", problem, o.install)
}

// toolEnv is the whole environment of a tool a test runs, extra added: a
// home of its own and empty AWS config and credentials files, so that
// nothing of the machine's AWS settings applies, and no instance metadata
// lookup, so that it reaches nothing beyond the Ferry on loopback it is
// pointed at.
func toolEnv(t testing.TB, extra ...string) []string {
	t.Helper()
	home := t.TempDir()
	empty := filepath.Join(home, "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return append([]string{"HOME=" + home, "PATH=/usr/bin:/bin", "AWS_EC2_METADATA_DISABLED=true",
		"AWS_CONFIG_FILE=" + empty, "AWS_SHARED_CREDENTIALS_FILE=" + empty}, extra...)
}

// awsCLIProblem says why the CLI at path cannot drive the test, or "" when
// it answers --version as the AWS CLI does.
func awsCLIProblem(ctx context.Context, path string) string {
	if _, err := os.Stat(path); err != nil {
		return fmt.Sprintf("no AWS CLI at %s: %v", path, err)
	}
	out, err := exec.CommandContext(ctx, path, "--version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "aws-cli/") {
		return fmt.Sprintf("the AWS CLI at %s does not run: %v: %q", path, err, out)
	}
	return ""
}

// jsSDKProblem says why node (a path, "" when none was found) cannot run
// the npm project in dir, or "" when it can: each dependency that
// package.json pins must be installed at that version, so that a stale
// node_modules is not mistaken for the pinned SDK.
func jsSDKProblem(ctx context.Context, node, dir string) string {
	if node == "" {
		return "node is not on PATH"
	}
	if out, err := exec.CommandContext(ctx, node, "--version").CombinedOutput(); err != nil || !strings.HasPrefix(string(out), "v") {
		return fmt.Sprintf("node at %s does not run: %v: %q", node, err, out)
	}
	var pkg struct{ Dependencies map[string]string }
	if err := readJSONFile(filepath.Join(dir, "package.json"), &pkg); err != nil || len(pkg.Dependencies) == 0 {
		return fmt.Sprintf("%s/package.json names no dependencies (%v)", dir, err)
	}
	for name, want := range pkg.Dependencies {
		var got struct{ Version string }
		if err := readJSONFile(filepath.Join(dir, "node_modules", name, "package.json"), &got); err != nil {
			return fmt.Sprintf("%s is not installed in %s: %v", name, dir, err)
		}
		if got.Version != want {
			return fmt.Sprintf("%s/node_modules is stale: %s is at %s, package.json pins %s", dir, name, got.Version, want)
		}
	}
	return ""
}

// boto3Problem says why python cannot import boto3, or "" when it can.
func boto3Problem(ctx context.Context, python string) string {
	return pythonProblem(ctx, python, "boto3")
}

// celeryProblem says why python cannot run a Celery worker on kombu's SQS
// transport (which needs boto3, and pycurl for its receives), or "" when
// it can.
func celeryProblem(ctx context.Context, python string) string {
	return pythonProblem(ctx, python, "celery, kombu.transport.SQS, kombu.asynchronous.aws.sqs.connection, pycurl, boto3")
}

// pythonProblem says why python cannot import modules (a comma-separated
// list), or "" when it can.
func pythonProblem(ctx context.Context, python, modules string) string {
	if _, err := os.Stat(python); err != nil {
		return fmt.Sprintf("no Python at %s: %v", python, err)
	}
	if out, err := exec.CommandContext(ctx, python, "-c", "import "+modules).CombinedOutput(); err != nil {
		return fmt.Sprintf("%s does not import %s: %v: %q", python, modules, err, out)
	}
	return ""
}

func readJSONFile(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

func TestOutsideToolGate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		env      map[string]string
		required bool
	}{
		{nil, false},
		{map[string]string{"CI": "true"}, true},
		{map[string]string{"CI": "1"}, true},
		{map[string]string{"CI": "false"}, false},
		{map[string]string{"FERRY_REQUIRE_X": "1"}, true},
		{map[string]string{"FERRY_REQUIRE_X": "0"}, false},
		{map[string]string{"FERRY_REQUIRE_Y": "1"}, false},
		{map[string]string{"CI": "false", "FERRY_REQUIRE_X": "true"}, true},
	} {
		if got := toolRequired(func(k string) string { return tc.env[k] }, "FERRY_REQUIRE_X"); got != tc.required {
			t.Errorf("env %v: required %v, want %v", tc.env, got, tc.required)
		}
	}

	dir := t.TempDir()
	write := func(name, body string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	script := func(name, body string) string { return write(name, "#!/bin/sh\n"+body+"\n", 0o755) }
	missing := filepath.Join(dir, "absent")

	cli := script("aws", `echo "aws-cli/2.9.19 Python/3.11.2 Linux/6.1 source/x86_64.debian.12 prompt/off"`)
	brokenCLI := script("aws-broken", `echo "ModuleNotFoundError: No module named 'awscli'" >&2; exit 1`)
	impostor := script("aws-other", `echo "usage: aws [options]"`)

	node := script("node", `echo v20.20.2`)
	brokenNode := script("node-broken", `exit 127`)
	write("js/package.json", `{"dependencies": {"@aws-sdk/client-sqs": "3.1.0"}}`, 0o644)
	write("js/node_modules/@aws-sdk/client-sqs/package.json", `{"version": "3.1.0"}`, 0o644)
	write("stale/package.json", `{"dependencies": {"@aws-sdk/client-sqs": "3.2.0"}}`, 0o644)
	write("stale/node_modules/@aws-sdk/client-sqs/package.json", `{"version": "3.1.0"}`, 0o644)
	write("bare/package.json", `{"dependencies": {"@aws-sdk/client-sqs": "3.1.0"}}`, 0o644)

	python := script("python3", `[ "$2" = "import boto3" ]`)
	noBoto3 := script("python3-bare", `echo "ModuleNotFoundError: No module named 'boto3'" >&2; exit 1`)
	withCelery := script("python3-celery", `case "$2" in "import celery, "*) exit 0;; *) exit 1;; esac`)

	for _, tc := range []struct {
		name, problem string
		got           string
	}{
		{"aws", "", awsCLIProblem(context.Background(), cli)},
		{"aws missing", "no AWS CLI at", awsCLIProblem(context.Background(), missing)},
		{"aws broken", "does not run", awsCLIProblem(context.Background(), brokenCLI)},
		{"aws impostor", "does not run", awsCLIProblem(context.Background(), impostor)},
		{"js sdk", "", jsSDKProblem(context.Background(), node, filepath.Join(dir, "js"))},
		{"no node", "node is not on PATH", jsSDKProblem(context.Background(), "", filepath.Join(dir, "js"))},
		{"node broken", "does not run", jsSDKProblem(context.Background(), brokenNode, filepath.Join(dir, "js"))},
		{"no npm project", "names no dependencies", jsSDKProblem(context.Background(), node, missing)},
		{"not installed", "is not installed", jsSDKProblem(context.Background(), node, filepath.Join(dir, "bare"))},
		{"stale", "is at 3.1.0, package.json pins 3.2.0", jsSDKProblem(context.Background(), node, filepath.Join(dir, "stale"))},
		{"boto3", "", boto3Problem(context.Background(), python)},
		{"no python", "no Python at", boto3Problem(context.Background(), missing)},
		{"no boto3", "does not import boto3", boto3Problem(context.Background(), noBoto3)},
		{"celery", "", celeryProblem(context.Background(), withCelery)},
		{"celery, no python", "no Python at", celeryProblem(context.Background(), missing)},
		{"no celery", "does not import celery, kombu", celeryProblem(context.Background(), noBoto3)},
	} {
		if (tc.problem == "") != (tc.got == "") || !strings.Contains(tc.got, tc.problem) {
			t.Errorf("%s: problem %q, want one containing %q", tc.name, tc.got, tc.problem)
		}
	}
}

package server_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ferrymq/ferry/internal/clock"
)

// The examples of docs/testing-dead-letters.md are tests of their own:
// each runs here, with the tool it is written for, against a Ferry as the
// page starts it (ferry serve --memory --clock-control --fault-injection),
// and the page must show each file as it is.

const (
	examplesDir     = "../../docs/examples/dead-letter"
	deadLettersPage = "../../docs/testing-dead-letters.md"
)

var updateDocs = flag.Bool("update-docs", false, "rewrite the examples shown in "+deadLettersPage+" from their files")

// pageExamples are the files the page shows, by their path from the
// repository's root, with the language of their code block.
var pageExamples = []struct{ path, lang string }{
	{"ferrytest/example_test.go", "go"},
	{"docs/examples/dead-letter/test_dead_letter.py", "python"},
	{"docs/examples/dead-letter/dead-letter.test.mjs", "js"},
	{"docs/examples/dead-letter/dead-letter.sh", "sh"},
}

// exampleFerry is a Ferry as the page starts it: its clock runs until an
// example freezes it, and it takes fault rules.
func exampleFerry(t *testing.T) *ferry {
	t.Helper()
	return start(t, controlled(clock.NewControlled()), withFaults(1))
}

// runExample runs an example program in dir against f and returns what it
// printed; the program failing fails the test.
func runExample(t *testing.T, f *ferry, dir string, env []string, prog string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, prog, args...)
	cmd.Dir = dir
	cmd.Env = append(env, "FERRY_ENDPOINT="+f.srv.URL())
	cmd.WaitDelay = 5 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", prog, strings.Join(args, " "), err, &out)
	}
	return out.String()
}

// wantRan fails t unless out, an example's output, has a line that starts
// with each of want.
func wantRan(t *testing.T, out string, want ...string) {
	t.Helper()
	lines := strings.Split(out, "\n")
	for _, w := range want {
		found := false
		for _, l := range lines {
			found = found || strings.HasPrefix(strings.TrimSpace(l), w)
		}
		if !found {
			t.Errorf("the example's output lacks the line %q:\n%s", w, out)
		}
	}
}

func TestDeadLetterExamplePython(t *testing.T) {
	t.Parallel()
	run := func(t *testing.T, python string) {
		f := exampleFerry(t)
		out := runExample(t, f, examplesDir, toolEnv(t, "PYTHONDONTWRITEBYTECODE=1"), python, "-m", "unittest", "-v", "test_dead_letter")
		wantRan(t, out, "Ran 1 test in", "OK")
		if strings.Contains(out, "skipped") {
			t.Errorf("the example skipped:\n%s", out)
		}
	}
	t.Run("debian", func(t *testing.T) {
		t.Parallel()
		boto3Tool.need(t)
		run(t, debianPython) // botocore 1.29: the redrive by hand
	})
	// A boto3 with move tasks takes the example's other path: where the
	// Python on PATH has one, it runs too.
	t.Run("move-tasks", func(t *testing.T) {
		t.Parallel()
		python := pythonWithMoveTasks(t)
		run(t, python)
	})
}

// pythonWithMoveTasks is the interpreter of the python3 on PATH when its
// boto3 has StartMessageMoveTask; t skips without one.
func pythonWithMoveTasks(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "python3", "-c",
		"import sys, boto3; assert hasattr(boto3.client('sqs', region_name='us-east-1'), 'start_message_move_task'); print(sys.executable)").Output()
	if err != nil {
		t.Skipf("the python3 on PATH has no boto3 with move tasks (June 2023 on): %v", err)
	}
	return strings.TrimSpace(string(out))
}

func TestDeadLetterExampleJSSDK(t *testing.T) {
	t.Parallel()
	jsSDKTool.need(t)
	node, _ := exec.LookPath("node")
	// Node resolves the SDK from the script's own directory: a copy beside
	// the pinned npm project's node_modules.
	dir := t.TempDir()
	modules, err := filepath.Abs(filepath.Join(jsSDKDir, "node_modules"))
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join(examplesDir, "dead-letter.test.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "dead-letter.test.mjs"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(modules, filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	f := exampleFerry(t)
	out := runExample(t, f, dir, toolEnv(t), node, "--test", "dead-letter.test.mjs")
	wantRan(t, out, "# pass 1", "# fail 0")
}

// shellTools are what the AWS CLI example calls beside aws and ferry.
var shellTools = outsideTool{
	require: "FERRY_REQUIRE_AWS_CLI",
	install: "install Debian's bash, curl and jq",
	problem: func(ctx context.Context) string {
		for _, tool := range []string{"/usr/bin/bash", "/usr/bin/curl", "/usr/bin/jq"} {
			if err := exec.CommandContext(ctx, tool, "--version").Run(); err != nil {
				return fmt.Sprintf("%s does not run: %v", tool, err)
			}
		}
		return ""
	},
}

func TestDeadLetterExampleAWSCLI(t *testing.T) {
	t.Parallel()
	awsCLITool.need(t)
	shellTools.need(t)
	bin := buildFerry(t)
	f := exampleFerry(t)
	out := runExample(t, f, examplesDir, toolEnv(t, "PATH="+filepath.Dir(bin)+":/usr/bin:/bin"), "/usr/bin/bash", "dead-letter.sh")
	wantRan(t, out, "PASS: dead-letter path")
}

// TestDeadLetterPageShowsExamples: the page shows each example file as it
// is, after a line <!-- PATH -->, so that the page and the tested files
// cannot drift; go test -run TestDeadLetterPage -update-docs rewrites the
// page's copies from the files.
func TestDeadLetterPageShowsExamples(t *testing.T) {
	t.Parallel()
	page, err := os.ReadFile(deadLettersPage)
	if err != nil {
		t.Fatal(err)
	}
	text := string(page)
	for _, ex := range pageExamples {
		src, err := os.ReadFile(filepath.Join("../..", ex.path))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(src, []byte("```")) {
			t.Fatalf("%s holds a code fence, which would end its block on the page", ex.path)
		}
		marker := "<!-- " + ex.path + " -->\n"
		block := marker + "```" + ex.lang + "\n" + string(src) + "```\n"
		if strings.Contains(text, block) {
			continue
		}
		start := strings.Index(text, marker)
		if start < 0 {
			t.Errorf("%s does not show %s: put a line <!-- %s --> where it goes", deadLettersPage, ex.path, ex.path)
			continue
		}
		// The block ends at the first fence after its own.
		open := start + len(marker)
		end := strings.Index(text[open:], "\n```\n")
		if !*updateDocs || !strings.HasPrefix(text[open:], "```") || end < 0 {
			t.Errorf("%s shows %s otherwise than the file: go test ./internal/server -run TestDeadLetterPage -update-docs copies it", deadLettersPage, ex.path)
			continue
		}
		text = text[:start] + block + text[open+end+len("\n```\n"):]
	}
	if *updateDocs && text != string(page) {
		if err := os.WriteFile(deadLettersPage, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Every example in the directory is on the page.
	files, err := filepath.Glob(filepath.Join(examplesDir, "*"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if !strings.Contains(text, "<!-- docs/examples/dead-letter/"+filepath.Base(f)+" -->") {
			t.Errorf("%s is not shown on %s", f, deadLettersPage)
		}
	}
}

package server_test

import (
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// layerRule forbids the packages at from, and under it, to depend on
// those at or under any of never, directly or through other packages.
// Paths are relative to the module. docs/architecture.md explains them.
type layerRule struct {
	from  string
	never []string
	why   string
}

var layerRules = []layerRule{
	{"internal/engine", []string{"internal/sqs", "internal/sns", "internal/cloudwatch", "internal/protocol", "internal/server"},
		"the engine keeps queues, messages and records; AWS's actions, wording and wire formats live above it"},
	{"internal/protocol", []string{"internal/engine"},
		"the wire formats know nothing of storage"},
	{"internal/sqs", []string{"internal/sns"},
		"SNS delivers into SQS, never the other way round; server wires the two"},
	{"internal/sns", []string{"internal/sqs"},
		"SNS reaches SQS queues through the interface it declares (sns.SQS), which server fills with sqs.Port"},
	{"internal/server", []string{"internal/engine/embedded"},
		"the server is given an engine.Store; the command line chooses the backend"},
}

// knownLayerViolations are the dependencies ("from -> to") that break a
// rule today, each with why it is still there. The list may only shrink:
// a new violation fails the test, and so does an entry that no longer
// occurs, so that it is removed. None today.
var knownLayerViolations = map[string]string{}

// TestLayers checks the rules between Ferry's layers on the packages as
// they are built (test files aside: a test may set up what it needs).
func TestLayers(t *testing.T) {
	t.Parallel()
	graph := moduleImports(t)
	for _, p := range []string{"internal/engine/embedded", "internal/protocol", "internal/sqs", "internal/sns"} {
		if _, ok := graph[p]; !ok {
			t.Fatalf("go list did not list %s among %d packages: the rules would check nothing", p, len(graph))
		}
	}
	for _, problem := range checkLayers(graph, layerRules, knownLayerViolations) {
		t.Error(problem)
	}
}

// TestCheckLayers checks the checker on made-up import graphs.
func TestCheckLayers(t *testing.T) {
	t.Parallel()
	rules := []layerRule{{"a", []string{"b"}, "a is below b"}}
	cases := []struct {
		name     string
		graph    map[string][]string
		known    map[string]string
		problems []string // each problem must contain the matching string
	}{
		{"clean", map[string][]string{"a": {"c"}, "b": {"a"}, "c": nil}, nil, nil},
		{"direct", map[string][]string{"a": {"b"}, "b": nil}, nil, []string{"a -> b (a is below b)"}},
		{"through another package", map[string][]string{"a": {"c"}, "c": {"b/x"}, "b/x": nil}, nil,
			[]string{"a -> b/x through a → c → b/x"}},
		{"from a sub-package", map[string][]string{"a/y": {"b"}, "b": nil}, nil, []string{"a/y -> b"}},
		{"a name that only starts alike", map[string][]string{"ab": {"b"}, "a": {"bc"}, "b": nil, "bc": nil}, nil, nil},
		{"known", map[string][]string{"a": {"b"}, "b": nil}, map[string]string{"a -> b": "being moved"}, nil},
		{"known but gone", map[string][]string{"a": nil, "b": nil}, map[string]string{"a -> b": "being moved"},
			[]string{"a -> b is listed as a known violation but no longer occurs"}},
	}
	for _, tc := range cases {
		got := checkLayers(tc.graph, rules, tc.known)
		ok := len(got) == len(tc.problems)
		for i := 0; ok && i < len(got); i++ {
			ok = strings.Contains(got[i], tc.problems[i])
		}
		if !ok {
			t.Errorf("%s: problems %q, want ones containing %q", tc.name, got, tc.problems)
		}
	}
}

// moduleImports lists the module's packages with their imports, both
// relative to the module ("internal/sqs"), as go list reads them.
func moduleImports(t *testing.T) map[string][]string {
	t.Helper()
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil || strings.TrimSpace(string(gomod)) == "" {
		t.Fatalf("go env GOMOD: %q, %v", gomod, err)
	}
	cmd := exec.Command("go", "list", "-f", "{{.Module.Path}} {{.ImportPath}} {{join .Imports \" \"}}", "./...")
	cmd.Dir = filepath.Dir(strings.TrimSpace(string(gomod)))
	out, err := cmd.Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("go list: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	graph := map[string][]string{}
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		rel := func(p string) (string, bool) { return strings.CutPrefix(p, f[0]+"/") }
		pkg, ok := rel(f[1])
		if !ok {
			t.Fatalf("package %s is outside module %s", f[1], f[0])
		}
		graph[pkg] = nil
		for _, imp := range f[2:] {
			if r, ok := rel(imp); ok {
				graph[pkg] = append(graph[pkg], r)
			}
		}
	}
	return graph
}

// under reports whether pkg is dir or inside it.
func under(pkg, dir string) bool { return pkg == dir || strings.HasPrefix(pkg, dir+"/") }

// checkLayers returns a problem for every dependency that breaks a rule
// and is not known, and for every known one that is gone, in a stable
// order.
func checkLayers(graph map[string][]string, rules []layerRule, known map[string]string) []string {
	pkgs := make([]string, 0, len(graph))
	for p := range graph {
		pkgs = append(pkgs, p)
	}
	sort.Strings(pkgs)
	var problems []string
	seen := map[string]bool{}
	for _, r := range rules {
		for _, from := range pkgs {
			if !under(from, r.from) {
				continue
			}
			for _, chain := range forbiddenChains(graph, from, r.never) {
				key := from + " -> " + chain[len(chain)-1]
				seen[key] = true
				if _, ok := known[key]; ok {
					continue
				}
				problem := key + " (" + r.why + ")"
				if len(chain) > 2 {
					problem = key + " through " + strings.Join(chain, " → ") + " (" + r.why + ")"
				}
				problems = append(problems, problem)
			}
		}
	}
	var gone []string
	for key := range known {
		if !seen[key] {
			gone = append(gone, key+" is listed as a known violation but no longer occurs: remove it from knownLayerViolations")
		}
	}
	sort.Strings(gone)
	return append(problems, gone...)
}

// forbiddenChains returns, for each package under never that from reaches,
// the shortest import chain from from to it (breadth first), sorted by
// the package reached.
func forbiddenChains(graph map[string][]string, from string, never []string) [][]string {
	prev := map[string]string{from: ""}
	queue := []string{from}
	var reached []string
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, imp := range graph[p] {
			if _, ok := prev[imp]; ok {
				continue
			}
			prev[imp] = p
			queue = append(queue, imp)
			if slices.ContainsFunc(never, func(dir string) bool { return under(imp, dir) }) {
				reached = append(reached, imp)
			}
		}
	}
	sort.Strings(reached)
	chains := make([][]string, 0, len(reached))
	for _, to := range reached {
		var chain []string
		for p := to; p != ""; p = prev[p] {
			chain = append(chain, p)
		}
		slices.Reverse(chain)
		chains = append(chains, chain)
	}
	return chains
}

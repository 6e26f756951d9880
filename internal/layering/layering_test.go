package layering

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/dageval/dageval"

// allowed maps a package (or a prefix ending in "/") to the module packages it
// may import. The order mirrors DESIGN.md: llm ← tool ← agent ←
// backend/middleware/profile ← harness ← fakes/rubrics ← evals ← reports ← cli ← cmd.
var allowed = []struct {
	pkg     string
	imports []string
}{
	{"harness/llm", nil},
	{"harness/catalog", []string{"harness/llm"}},
	{"harness/tool", []string{"harness/llm"}},
	{"harness/agent", []string{"harness/llm", "harness/tool"}},
	{"harness/backend/", []string{"harness/llm", "harness/tool", "harness/agent", "harness/backend"}},
	{"harness/backend", []string{"harness/llm", "harness/tool", "harness/agent"}},
	{"harness/middleware/", []string{"harness/llm", "harness/catalog", "harness/tool", "harness/agent", "harness/backend", "harness/middleware"}},
	{"harness/middleware", []string{"harness/llm", "harness/catalog", "harness/tool", "harness/agent", "harness/backend"}},
	{"harness/profile", []string{"harness/llm", "harness/catalog", "harness/tool", "harness/agent", "harness/backend", "harness/middleware"}},
	{"harness/checkpoint", []string{"harness/llm", "harness/agent"}},
	// The server side of the async subagents' protocol serves plain agents.
	{"harness/agentserver", []string{"harness/llm", "harness/tool", "harness/agent"}},
	{"harness/provider/", []string{"harness/llm", "harness/provider", "harness/provider/"}},
	{"harness/provider", []string{"harness/llm"}},
	// The agent-file format builds on the assembly pipeline, never the reverse.
	{"harness/agentfile", []string{"harness", "harness/"}},
	{"harness/", []string{"harness/"}},
	{"harness", []string{"harness/llm", "harness/catalog", "harness/tool", "harness/agent", "harness/backend",
		"harness/middleware", "harness/profile", "harness/checkpoint", "harness/provider", "harness/provider/"}},
	// The cassette format and the fakes' internal helpers stand alone.
	{"fakes/cassette", nil},
	{"fakes/internal/", nil},
	{"fakes/", []string{"harness", "harness/", "fakes", "fakes/"}},
	{"fakes", []string{"harness", "harness/", "fakes/internal/"}},
	{"rubrics", []string{"harness", "harness/"}},
	// A team's own command, in the example of one, is built on the CLI.
	{"evals/examples/gocli/cmd/", []string{"cli", "evals/examples/gocli"}},
	{"evals/", []string{"harness", "harness/", "fakes", "fakes/", "rubrics", "evals", "evals/"}},
	{"evals", []string{"harness", "harness/", "fakes", "fakes/", "rubrics"}},
	{"reports", []string{"harness", "harness/", "fakes", "fakes/", "rubrics", "evals", "evals/"}},
	// The CLI as a library may use everything below it; only commands use it.
	{"cli", []string{"harness", "harness/", "fakes", "fakes/", "rubrics", "evals", "evals/", "reports"}},
	{"cmd/", []string{""}},
	{"internal/", []string{""}},
}

// leaves are utility packages with no module imports of their own; any
// package may use them.
var leaves = []string{"internal/fileutil", "internal/gcpercent", "internal/jsonscan", "internal/procgroup", "internal/scrub", "internal/yamlx"}

// sdkPrefixes may only be imported under harness/provider/.
//
// The cloud credential chains count as provider SDKs: AWS's, Azure's and
// Google's, which the cloud adapters pull in.
var sdkPrefixes = []string{
	"github.com/anthropics/anthropic-sdk-go", "github.com/openai/openai-go", "google.golang.org/genai",
	"github.com/aws/", "github.com/Azure/", "github.com/AzureAD/",
	"golang.org/x/oauth2", "google.golang.org/api", "cloud.google.com/go",
}

// cloudPrefixes are the modules only a cloud adapter may link: the
// credential chains and transports of AWS, Azure and Google Cloud.
var cloudPrefixes = []string{
	"github.com/aws/", "github.com/Azure/", "github.com/AzureAD/",
	"golang.org/x/oauth2", "google.golang.org/api", "google.golang.org/grpc", "cloud.google.com/go",
}

// TestCloudChainsStayInTheirAdapters is the go list -deps check: the
// adapters of the first-party APIs and everything the harness builds on
// link none of the cloud credential chains, which only the Bedrock, Vertex
// AI and Azure adapters (and what wires them in) need.
func TestCloudChainsStayInTheirAdapters(t *testing.T) {
	pkgs := []string{"harness/llm", "harness/agent", "harness/provider", "harness/provider/anthropic", "harness/provider/openai",
		"harness/middleware", "harness/profile", "harness/catalog", "fakes/cassette", "fakes/llmserver"}
	for _, p := range pkgs {
		out, err := exec.Command("go", "list", "-deps", module+"/"+p).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", p, err)
		}
		for _, dep := range strings.Fields(string(out)) {
			for _, c := range cloudPrefixes {
				if strings.HasPrefix(dep, c) {
					t.Errorf("%s links %s; only harness/provider/{bedrock,vertex,azure} may pull in cloud credential chains", p, dep)
					break
				}
			}
		}
	}
}

type pkg struct {
	ImportPath string
	Imports    []string
}

func rule(rel string) ([]string, bool) {
	for _, r := range allowed {
		if rel == r.pkg || (strings.HasSuffix(r.pkg, "/") && strings.HasPrefix(rel, r.pkg)) {
			return r.imports, true
		}
	}
	return nil, false
}

func permitted(imp string, allow []string) bool {
	for _, l := range leaves {
		if imp == l {
			return true
		}
	}
	for _, a := range allow {
		if imp == a || (strings.HasSuffix(a, "/") && strings.HasPrefix(imp, a)) || a == "" {
			return true
		}
	}
	return false
}

func TestLayering(t *testing.T) {
	out, err := exec.Command("go", "list", "-json", module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	checked := 0
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		allow, ok := rule(rel)
		if !ok {
			t.Errorf("package %s has no layering rule; add it to allowed", p.ImportPath)
			continue
		}
		checked++
		for _, imp := range p.Imports {
			for _, sdk := range sdkPrefixes {
				if strings.HasPrefix(imp, sdk) && !strings.HasPrefix(rel, "harness/provider/") {
					t.Errorf("%s imports the provider SDK %s; only harness/provider/* may", rel, imp)
				}
			}
			if !strings.HasPrefix(imp, module) {
				continue
			}
			irel := strings.TrimPrefix(strings.TrimPrefix(imp, module), "/")
			if slices.Contains(leaves, rel) {
				t.Errorf("%s is a leaf and imports %s; leaves may import nothing from the module", rel, irel)
				continue
			}
			if !permitted(irel, allow) {
				t.Errorf("%s imports %s, against the layering in DESIGN.md", rel, irel)
			}
		}
	}
	if checked < 4 {
		t.Fatalf("only %d packages checked; go list output looks wrong", checked)
	}
}

func TestRulesCatchViolations(t *testing.T) {
	tests := []struct {
		from, to string
		ok       bool
	}{
		{"harness/agent", "harness/llm", true},
		{"harness/llm", "harness/agent", false},
		{"harness/agent", "harness/middleware", false},
		{"harness/middleware", "harness/backend", true},
		{"harness", "evals", false},
		{"harness", "harness/agentfile", false},
		{"harness", "harness/backend/sqlitestore", false},
		{"harness", "harness/provider/builtin", true},
		{"harness/agentfile", "harness", true},
		{"harness/agentfile", "harness/backend/sqlitestore", true},
		{"harness/agentfile", "evals", false},
		{"harness/agentfile", "fakes", false},
		{"harness/profile", "harness/agentfile", false},
		{"evals", "harness/agentfile", true},
		{"harness/profile", "fakes", false},
		{"evals", "reports", false},
		{"evals/examples/quickstart/record", "evals/examples/quickstart", true},
		{"evals", "evals/examples/quickstart", false},
		{"evals/examples/quickstart", "reports", false},
		{"reports", "evals", true},
		{"cmd/dageval", "reports", true},
		{"cmd/dageval", "cli", true},
		{"cli", "reports", true},
		{"reports", "cli", false},
		{"evals/examples/gocli/cmd/evals", "cli", true},
		{"evals/examples/gocli", "cli", false},
		{"fakes/cassettediff", "fakes/llmserver", true},
		{"fakes/cassettediff", "evals", false},
		{"evals", "cli", false},
		{"harness", "cli", false},
		{"harness/provider/anthropic", "harness/agent", false},
		{"harness/checkpoint", "harness/agent", true},
		{"harness/checkpoint", "harness/middleware", false},
		{"harness/checkpoint", "fakes", false},
		{"harness/provider/builtin", "harness/provider/openai", true},
		{"harness/provider/bedrock", "harness/provider/anthropic", true},
		{"harness/provider/azure", "harness/provider/openai", true},
		{"fakes/replay", "harness/provider/bedrock", true},
		{"harness/catalog", "harness/agent", false},
		{"harness/middleware", "harness/catalog", true},
		{"evals", "harness/catalog", true},
		{"reports", "harness/catalog", true},
		{"harness/provider", "harness/catalog", false},
		{"harness/backend/sqlitestore", "harness/backend", true},
		{"harness/backend", "harness/backend/sqlitestore", false},
		{"harness/middleware", "harness/backend/sqlitestore", false},
		{"harness/backend/sqlitestore", "harness/middleware", false},
		{"fakes", "harness/llm", true},
		{"fakes", "fakes/internal/pieces", true},
		{"fakes", "fakes/llmserver", false},
		{"fakes", "evals", false},
		{"fakes/cassette", "internal/fileutil", true},
		{"fakes/cassette", "harness/llm", false},
		{"fakes/cassette", "fakes/recorder", false},
		{"fakes/internal/posttest", "fakes", false},
		{"fakes/llmserver", "fakes", true},
		{"fakes/llmserver", "fakes/cassette", true},
		{"fakes/llmserver", "rubrics", false},
		{"fakes/recorder", "fakes/cassette", true},
		{"fakes/recorder", "harness/provider", true},
		{"fakes/recorder", "evals", false},
		{"fakes/replay", "fakes/recorder", true},
		{"fakes/replay", "harness/provider/builtin", true},
		{"fakes/replay", "reports", false},
		{"harness/middleware", "fakes/recorder", false},
		{"rubrics", "fakes/cassette", false},
		{"evals", "fakes/recorder", true},
	}
	for _, tt := range tests {
		allow, ok := rule(tt.from)
		if !ok {
			t.Fatalf("no rule for %s", tt.from)
		}
		if got := permitted(tt.to, allow); got != tt.ok {
			t.Errorf("%s → %s permitted = %v, want %v", tt.from, tt.to, got, tt.ok)
		}
	}
}

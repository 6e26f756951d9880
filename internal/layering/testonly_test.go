package layering

import (
	"bufio"
	"bytes"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// testOnly are the standard library's packages for tests.
var testOnly = []string{"testing", "net/http/httptest"}

// testOnlyThirdParty are the dependencies that import a test-only package
// in non-test files, so that linking them links it: go-vcr's cassette
// package (its server-replay helpers) and recorder (its middleware records
// into an httptest.ResponseRecorder), and genai (its replay client). The
// CLI needs all three; nothing else may bring testing or httptest in.
var testOnlyThirdParty = []string{
	"gopkg.in/dnaeon/go-vcr.v4/pkg/cassette",
	"gopkg.in/dnaeon/go-vcr.v4/pkg/recorder",
	"google.golang.org/genai",
}

// TestCLILinksNoTestOnlyPackage is the go list -deps check on the binary:
// no package of this module that cmd/dageval links imports testing or
// net/http/httptest (test helpers take small interfaces instead, and the
// local server listens without httptest), and of the dependencies only
// those listed above do.
func TestCLILinksNoTestOnlyPackage(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", module+"/cmd/dageval").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	if bad := testOnlyImporters(out); len(bad) > 0 {
		t.Errorf("cmd/dageval links test-only packages through:\n%s", strings.Join(bad, "\n"))
	}
}

// testOnlyImporters returns "pkg imports x" for each package in go list
// output ("path imports...", a line each) that imports a test-only
// package and is not an allowed dependency.
func testOnlyImporters(goList []byte) []string {
	var bad []string
	sc := bufio.NewScanner(bytes.NewReader(goList))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || slices.Contains(testOnlyThirdParty, f[0]) {
			continue
		}
		for _, imp := range f[1:] {
			if slices.Contains(testOnly, imp) {
				bad = append(bad, f[0]+" imports "+imp)
			}
		}
	}
	return bad
}

func TestTestOnlyImportersCatchesViolations(t *testing.T) {
	in := []byte(module + "/fakes/llmserver net/http net/http/httptest\n" +
		module + "/evals fmt testing\n" +
		"gopkg.in/dnaeon/go-vcr.v4/pkg/cassette testing net/http/httptest\n" +
		module + "/cli fmt os\n")
	got := testOnlyImporters(in)
	want := []string{module + "/fakes/llmserver imports net/http/httptest", module + "/evals imports testing"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

// notInTheBinary are packages no command needs of its own: the Vertex AI
// adapter routes its calls itself, so the Google API client and the
// OpenTelemetry instrumentation it would bring stay out. Google Cloud's
// credential chain, which genai links for the Gemini adapter, reaches a
// few of their packages (cloud.google.com/go/auth/httptransport wraps its
// transport in otelhttp; gax-go's errors use googleapi): that chain is
// genaiChain, and only it may import them.
var notInTheBinary = []string{
	"google.golang.org/api", "go.opentelemetry.io/contrib",
}

// genaiChain are the modules of genai's credential chain.
var genaiChain = []string{"cloud.google.com/go/auth", "github.com/googleapis/gax-go/v2"}

func under(pkg string, mods []string) bool {
	for _, m := range mods {
		if pkg == m || strings.HasPrefix(pkg, m+"/") {
			return true
		}
	}
	return false
}

// unwantedImporters reads `go list -deps -f '{{.ImportPath}} {{join .Imports " "}}'`
// and returns each import of a notInTheBinary package by a package outside
// those modules and genaiChain.
func unwantedImporters(list []byte) []string {
	var bad []string
	sc := bufio.NewScanner(bytes.NewReader(list))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || under(f[0], notInTheBinary) || under(f[0], genaiChain) {
			continue
		}
		for _, imp := range f[1:] {
			if under(imp, notInTheBinary) {
				bad = append(bad, f[0]+" imports "+imp)
			}
		}
	}
	return bad
}

func TestUnwantedImportersCatchesViolations(t *testing.T) {
	in := []byte(module + "/harness/provider/vertex net/http google.golang.org/api/option\n" +
		"cloud.google.com/go/auth/httptransport go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp\n" +
		"google.golang.org/api/googleapi google.golang.org/api/internal/third_party/uritemplates\n" +
		"github.com/googleapis/gax-go/v2/apierror google.golang.org/api/googleapi\n" +
		"github.com/some/sdk go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp\n")
	got := unwantedImporters(in)
	want := []string{module + "/harness/provider/vertex imports google.golang.org/api/option",
		"github.com/some/sdk imports go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestCLILinksNoGoogleAPIClient is the go list -deps check that keeps
// them out of cmd/dageval but for genai's credential chain.
func TestCLILinksNoGoogleAPIClient(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", module+"/cmd/dageval").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, b := range unwantedImporters(out) {
		t.Error("cmd/dageval: " + b)
	}
}

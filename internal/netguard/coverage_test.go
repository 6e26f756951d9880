package netguard

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const module = "github.com/dageval/dageval"

// adapterPackage matches a provider adapter among a test binary's
// dependencies, including the package under test itself.
var adapterPackage = regexp.MustCompile(`^` + regexp.QuoteMeta(module) + `/harness/provider/(anthropic|openai|gemini|bedrock|vertex|azure)( \[.*\])?$`)

// guardCall is how a TestMain installs the guard.
var guardCall = regexp.MustCompile(`netguard\.(Main\(|Install\(\)|Transport\(\))`)

// TestEveryProviderTestIsGuarded keeps `go test ./...` offline: the tests of
// every package that links a provider adapter (and so could reach a real
// provider) install the guard in their TestMain.
func TestEveryProviderTestIsGuarded(t *testing.T) {
	out, err := exec.Command("go", "list", "-test", "-json", module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	type pkg struct {
		ImportPath   string
		Dir          string
		ForTest      string
		TestGoFiles  []string
		XTestGoFiles []string
		Deps         []string
	}
	files := map[string][]string{} // package → its test files
	var binaries []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		switch {
		case strings.HasSuffix(p.ImportPath, ".test"):
			binaries = append(binaries, p)
		case p.ForTest == "" && !strings.Contains(p.ImportPath, " "):
			for _, f := range append(p.TestGoFiles, p.XTestGoFiles...) {
				files[p.ImportPath] = append(files[p.ImportPath], filepath.Join(p.Dir, f))
			}
		}
	}
	checked := 0
	for _, b := range binaries {
		links := false
		for _, d := range b.Deps {
			if adapterPackage.MatchString(d) {
				links = true
				break
			}
		}
		if !links {
			continue
		}
		checked++
		under := strings.TrimSuffix(b.ImportPath, ".test")
		guarded := false
		for _, f := range files[under] {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(src, []byte("func TestMain(")) && guardCall.Match(src) {
				guarded = true
				break
			}
		}
		if !guarded {
			t.Errorf("%s: its tests link a provider adapter but no TestMain calls netguard.Main(m) (or netguard.Install and netguard.Code)", under)
		}
	}
	if checked < 3 {
		t.Fatalf("only %d test binaries link an adapter; go list output looks wrong", checked)
	}
}

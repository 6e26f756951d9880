package layering

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// packageRow matches a row of ARCHITECTURE.md's package table: "| `path` | … |".
var packageRow = regexp.MustCompile("^\\| `([a-z0-9_/]+)` \\|")

// TestArchitectureListsEveryPackage keeps ARCHITECTURE.md true: its package
// table names every package of the module, and nothing else.
func TestArchitectureListsEveryPackage(t *testing.T) {
	doc, err := os.ReadFile("../../ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	sc := bufio.NewScanner(bytes.NewReader(doc))
	for sc.Scan() {
		if m := packageRow.FindStringSubmatch(sc.Text()); m != nil {
			listed = append(listed, m[1])
		}
	}
	out, err := exec.Command("go", "list", module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []string
	for _, p := range strings.Fields(string(out)) {
		pkgs = append(pkgs, strings.TrimPrefix(strings.TrimPrefix(p, module), "/"))
	}
	for _, p := range pkgs {
		if !slices.Contains(listed, p) {
			t.Errorf("package %s is missing from ARCHITECTURE.md's package table", p)
		}
		if _, ok := rule(p); !ok {
			t.Errorf("package %s has no layering rule", p)
		}
	}
	for _, l := range listed {
		if !slices.Contains(pkgs, l) {
			t.Errorf("ARCHITECTURE.md lists %s, which is not a package of the module", l)
		}
	}
	if len(listed) < 10 {
		t.Fatalf("found only %d package rows in ARCHITECTURE.md; did the table's format change?", len(listed))
	}
}

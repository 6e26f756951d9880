package yamlx

import (
	"strings"
	"testing"
)

// TestPositionsIndexWaitsForAnError checks that a parsed document builds
// its index of token positions (an entry per token, needed only to name
// the key of an error) on its first error, not when it is parsed, and
// that errors still name their keys.
func TestPositionsIndexWaitsForAnError(t *testing.T) {
	d, err := Parse("f.yaml", []byte("cases:\n  - id: a\n    input: hi\n  - id: b\n    input: [x]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if d.byPos != nil {
		t.Fatalf("Parse built the positions index (%d entries) before any error needed it", len(d.byPos))
	}
	if !d.Has("cases[1].input") {
		t.Fatal("the key paths are not indexed")
	}
	e := d.At(d.Node("cases[1].input"), "want a string")
	if got := e.Error(); !strings.HasPrefix(got, "f.yaml:5:12: cases[1].input: ") {
		t.Errorf("error %q, want it at f.yaml:5:12, key cases[1].input", got)
	}
	var v struct {
		Cases []struct {
			ID    string `yaml:"id"`
			Input string `yaml:"input"`
		} `yaml:"cases"`
	}
	derr := d.Decode(&v)
	if derr == nil || !strings.Contains(derr.Error(), "cases[1].input") {
		t.Errorf("decode error %v, want it to name cases[1].input", derr)
	}
}

package evals

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/goccy/go-yaml/ast"

	"github.com/dageval/dageval/internal/yamlx"
)

// caseEntries are entries of a cases list, plain and awkward: what the
// hand-written case decoder takes must decode as go-yaml decodes it, and
// what go-yaml refuses it must leave to go-yaml.
var caseEntries = []string{
	`{id: a, input: hi}`,
	`{id: "quoted", input: 'single', cassette: c.yaml}`,
	"id: block\n    input: |\n      two\n      lines\n    rubric: helpful",
	`{id: r, input: x, rubric: [{name: answers, description: Gives the answer.}], checks: [{final_answer: {contains: "42"}}]}`,
	`{id: n, input: x, rubric: null, checks: ~, expect:, agent: null, messages: null}`,
	`{id: t, input: x, tags: [], models: null}`,
	`{id: t2, input: x, tags: [a, "b"], models: [m1]}`,
	`{id: t3, input: x, tags: [a, 1]}`,
	`{id: t4, input: x, tags: a}`,
	`{id: u, input: x, allow_unused: true}`,
	`{id: u2, input: x, allow_unused: false}`,
	`{id: u3, input: x, allow_unused: null}`,
	`{id: u4, input: x, allow_unused: "yes"}`,
	`{id: 12, input: x}`,
	`{id: true, input: x}`,
	`{id: , input: x}`,
	`{id: [a], input: x}`,
	`{input: 3}`,
	`{id: e, input: x, epochs: 2}`,
	`{id: e2, input: x, epochs: 2.5}`,
	`{id: f, input: x, files: {/a: b}}`,
	`{id: tl, input: x, tools: {lookup: {mock: {result: "42"}}}}`,
	`{id: k, input: x, unknown: 1}`,
	`{id: m, input: x, messages: [{role: user, content: hi}], agent: {system_prompt: s}}`,
	`{id: tag, input: !!str 5}`,
	`{id: tag2, input: x, checks: [{final_answer: !!map {contains: a}}]}`,
	`&anc {id: an, input: x}`,
	`{id: an2, input: &i x}`,
	`{id: al, input: *top}`,
	`{id: al2, input: x, rubric: [*top]}`,
	`{<<: *base, id: merge}`,
	`{id: mk, input: x, checks: [{<<: *base}]}`,
	`{"id": qk, "input": x}`,
	`? id
    : explicit`,
	`just a string`,
	`[a, list]`,
	`null`,
	`{}`,
}

// TestPlainCaseDecodesAsGoYAML checks the hand-written decoder of case
// entries against go-yaml's strict decoder, entry by entry.
func TestPlainCaseDecodesAsGoYAML(t *testing.T) {
	var b strings.Builder
	b.WriteString("top: &top anchored\nbase: &base {id: b, input: x}\ncases:\n")
	for _, e := range caseEntries {
		fmt.Fprintf(&b, "  - %s\n", e)
	}
	doc, err := yamlx.Parse("suite.yaml", []byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	items := doc.Node("cases").(*ast.SequenceNode).Values
	if len(items) != len(caseEntries) {
		t.Fatalf("%d entries parsed, want %d", len(items), len(caseEntries))
	}
	plain := 0
	for i, item := range items {
		var fast, slow rawCase
		took := readPlainCase(item, &fast)
		err := doc.DecodeNode(item, &slow)
		switch {
		case took && err != nil:
			t.Errorf("%s: read by hand, but go-yaml refuses it: %v", caseEntries[i], err)
		case took && !reflect.DeepEqual(fast, slow):
			t.Errorf("%s: read by hand as\n%#v\ngo-yaml decodes\n%#v", caseEntries[i], fast, slow)
		case took:
			plain++
		}
	}
	if plain < 14 {
		t.Errorf("only %d entries read by hand: the test no longer covers the fast path", plain)
	}
}

// TestPlainCaseAllocations checks that a plain case entry is not decoded
// by go-yaml's reflection (a struct field map and a conversion of the
// whole entry per case, over a hundred allocations); the bound is loose.
func TestPlainCaseAllocations(t *testing.T) {
	src := "cases:\n  - id: case-001\n    input: \"Question 1: what is the answer?\"\n    rubric: [{name: answers, description: Gives the answer.}]\n    checks: [{final_answer: {contains: \"42\"}}]\n"
	doc, err := yamlx.Parse("suite.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	item := doc.Node("cases").(*ast.SequenceNode).Values[0]
	p := &parser{doc: doc}
	allocs := testing.AllocsPerRun(20, func() {
		var rc rawCase
		if err := p.decodeCase(item, &rc); err != nil || rc.ID != "case-001" {
			t.Fatalf("decoded %+v, %v", rc, err)
		}
	})
	if allocs > 20 {
		t.Errorf("decoding a plain case took %v allocations, want at most 20", allocs)
	}
}

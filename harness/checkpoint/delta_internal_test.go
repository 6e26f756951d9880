package checkpoint

import (
	"reflect"
	"testing"

	"github.com/dageval/dageval/harness/llm"
)

// shallowSame must compare every field of llm.Message; when a field is added
// there, add it to shallowSame and bump messageFields.
func TestShallowSameCoversEveryMessageField(t *testing.T) {
	if n := reflect.TypeFor[llm.Message]().NumField(); n != messageFields {
		t.Fatalf("llm.Message has %d fields, shallowSame compares %d: update shallowSame and messageFields", n, messageFields)
	}
}

func TestShallowSameFallsBackToContent(t *testing.T) {
	a := llm.Assistant("hi", llm.ToolCall{ID: "1", Name: "x", Args: []byte(`{}`)})
	b := a
	if !shallowSame(&a, &b) {
		t.Fatal("a copied message shares its contents")
	}
	c := a.Clone()
	if shallowSame(&a, &c) {
		t.Fatal("a deep copy does not share slices")
	}
	if same, err := sameMessage(&a, &c); err != nil || !same {
		t.Fatalf("equal content must compare equal: %v %v", same, err)
	}
	c.ToolCalls[0].Args = []byte(`{"x":1}`)
	if same, _ := sameMessage(&a, &c); same {
		t.Fatal("changed arguments must compare different")
	}
}

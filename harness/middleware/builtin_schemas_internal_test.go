package middleware

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/dageval/dageval/harness/tool"
)

// The built-in tools' schemas are parsed only when a call is first
// validated (tool.BuiltinSchema), so a broken one would pass assembly and
// panic in a run: every one must parse here.
func TestBuiltinSchemasParse(t *testing.T) {
	docs := map[string]json.RawMessage{"task": taskParams, WriteTodosTool: json.RawMessage(writeTodosSchema)}
	for name, raw := range toolParams {
		docs[name] = raw
	}
	async, err := NewAsyncSubAgentMiddleware(AsyncSubAgentOptions{SubAgents: []AsyncSubAgent{{Name: "remote", Description: "d", GraphID: "g"}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range async.Tools() {
		docs[tl.Spec().Name] = tl.Spec().Parameters
	}
	if len(docs) != len(toolParams)+2+len(async.Tools()) {
		t.Fatalf("tool names collide: %d documents", len(docs))
	}
	for name, raw := range docs {
		if _, err := tool.ParseSchema(raw); err != nil {
			t.Errorf("schema of %s: %v", name, err)
		}
	}
}

// harness/tool's tests check its quick path against the general validator
// on a copy of the grader's verdict schema: the copy must be the schema.
func TestToolTestsCheckTheVerdictSchema(t *testing.T) {
	copied, err := os.ReadFile("../tool/testdata/rubric_verdict_schema.json")
	if err != nil {
		t.Fatal(err)
	}
	if string(copied) != graderResponseSchema {
		t.Fatalf("harness/tool/testdata/rubric_verdict_schema.json is not graderResponseSchema; copy it again:\n%s", graderResponseSchema)
	}
}

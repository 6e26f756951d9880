package tool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/tool"
)

type readArgs struct {
	FilePath string `json:"file_path" jsonschema:"absolute path"`
	Offset   int    `json:"offset,omitempty" jsonschema:"first line, 0-based"`
	Limit    *int   `json:"limit,omitempty"`
}

func TestTypedTool(t *testing.T) {
	var got readArgs
	rt, err := tool.New("read_file", "Reads a file.", func(_ context.Context, a readArgs) (string, error) {
		got = a
		return "ok", nil
	})
	require.NoError(t, err)
	spec := rt.Spec()
	assert.Equal(t, "read_file", spec.Name)
	assert.JSONEq(t, `{"type":"object","properties":{"file_path":{"type":"string","description":"absolute path"},"offset":{"type":"integer","description":"first line, 0-based"},"limit":{"type":["null","integer"]}},"required":["file_path"],"additionalProperties":false}`, string(spec.Parameters))

	tests := []struct {
		name    string
		args    string
		isError bool
		text    string
	}{
		{"valid", `{"file_path":"/a","offset":2}`, false, "ok"},
		{"missing required", `{"offset":2}`, true, `missing properties: ["file_path"]`},
		{"wrong type", `{"file_path":7}`, true, `has type "integer", want "string"`},
		{"unknown field", `{"file_path":"/a","colour":"red"}`, true, "colour"},
		{"not json", `{"file_path":`, true, "not valid JSON"},
		{"not an object", `[1,2]`, true, "invalid arguments"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := rt.Call(t.Context(), json.RawMessage(tt.args))
			require.NoError(t, err, "invalid args never surface as Go errors")
			assert.Equal(t, tt.isError, res.IsError)
			assert.Contains(t, res.Text(), tt.text)
		})
	}
	assert.Equal(t, readArgs{FilePath: "/a", Offset: 2}, got)
}

func TestTypedToolPanicBecomesErrorResult(t *testing.T) {
	bad := tool.Must(tool.New("bad", "", func(context.Context, struct{}) (string, error) {
		var m map[string]int
		m["x"] = 1
		return "", nil
	}))
	res, err := bad.Call(t.Context(), json.RawMessage(`{}`))
	require.NoError(t, err)
	assert.True(t, res.IsError)
	assert.Contains(t, res.Text(), "panic")
}

func TestWithDescriptionCopies(t *testing.T) {
	orig := tool.Must(tool.New("ls", "original", func(context.Context, struct{}) (string, error) { return "", nil }))
	over := tool.WithDescription(orig, "override")
	assert.Equal(t, "override", over.Spec().Description)
	assert.Equal(t, "original", orig.Spec().Description)
	assert.Equal(t, "ls", tool.Name(over))
}

func TestValidatedRawTool(t *testing.T) {
	raw := &tool.Func{
		ToolSpec: llm.ToolSpec{Name: "get_weather", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)},
		Fn:       func(context.Context, json.RawMessage) (tool.Result, error) { return tool.Text("sunny"), nil },
	}
	v, err := tool.Validated(raw)
	require.NoError(t, err)
	res, err := v.Call(t.Context(), json.RawMessage(`{}`))
	require.NoError(t, err)
	assert.True(t, res.IsError)
	res, _ = v.Call(t.Context(), json.RawMessage(`{"city":"Paris"}`))
	assert.Equal(t, "sunny", res.Text())

	_, err = tool.Validated(&tool.Func{ToolSpec: llm.ToolSpec{Name: "x", Parameters: json.RawMessage(`{"type":7}`)}})
	require.Error(t, err)
}

// Equal schema documents share one resolved schema, which keeps validating
// correctly when used from many goroutines; different documents do not mix.
func TestSchemasAreShared(t *testing.T) {
	doc := `{"type":"object","properties":{"n":{"type":"integer","minimum":1}},"required":["n"]}`
	a, err := tool.ParseSchema(json.RawMessage(doc))
	require.NoError(t, err)
	b, err := tool.ParseSchema(json.RawMessage(doc))
	require.NoError(t, err)
	assert.Same(t, a, b)
	other, err := tool.ParseSchema(json.RawMessage(`{"type":"object","properties":{"s":{"type":"string"}},"required":["s"]}`))
	require.NoError(t, err)
	assert.NotSame(t, a, other)

	_, err = tool.ParseSchema(json.RawMessage(`{"type":5}`))
	require.Error(t, err, "an invalid document is an error every time")
	_, err = tool.ParseSchema(json.RawMessage(`{"type":5}`))
	require.Error(t, err)

	s1, err := tool.SchemaFor[readArgs]()
	require.NoError(t, err)
	s2, err := tool.SchemaFor[readArgs]()
	require.NoError(t, err)
	assert.Same(t, s1, s2)

	done := make(chan struct{})
	for i := range 8 {
		go func() {
			defer func() { done <- struct{}{} }()
			s, err := tool.ParseSchema(json.RawMessage(doc))
			if !assert.NoError(t, err) {
				return
			}
			assert.NoError(t, s.Validate(json.RawMessage(`{"n":3}`)))
			assert.Error(t, s.Validate(json.RawMessage(`{"n":0}`)), "goroutine %d", i)
			assert.Error(t, other.Validate(json.RawMessage(`{"n":3}`)))
		}()
	}
	for range 8 {
		<-done
	}
}

// A built-in schema shows its compacted document at once and validates as
// ParseSchema's does; a broken document is found on the first Validate.
func TestBuiltinSchema(t *testing.T) {
	doc := "{\n  \"type\": \"object\",\n  \"properties\": {\"n\": {\"type\": \"integer\", \"minimum\": 1}},\n  \"required\": [\"n\"]\n}"
	b := tool.BuiltinSchema(json.RawMessage(doc))
	p, err := tool.ParseSchema(json.RawMessage(doc))
	require.NoError(t, err)
	assert.Equal(t, string(p.JSON()), string(b.JSON()))
	for _, args := range []string{`{"n":1}`, `{"n":0}`, `{}`, `{"n":"x"}`, `not json`, ``} {
		assert.Equal(t, fmt.Sprint(p.Validate(json.RawMessage(args))), fmt.Sprint(b.Validate(json.RawMessage(args))), args)
	}

	v := tool.ValidatedBy(&tool.Func{
		ToolSpec: llm.ToolSpec{Name: "count", Parameters: json.RawMessage(doc)},
		Fn:       func(context.Context, json.RawMessage) (tool.Result, error) { return tool.Text("ok"), nil },
	}, b)
	res, err := v.Call(t.Context(), json.RawMessage(`{"n":0}`))
	require.NoError(t, err)
	assert.True(t, res.IsError)
	res, _ = v.Call(t.Context(), json.RawMessage(`{"n":2}`))
	assert.Equal(t, "ok", res.Text())

	broken := tool.BuiltinSchema(json.RawMessage(`{"type":7}`))
	assert.Panics(t, func() { _ = broken.Validate(json.RawMessage(`{}`)) })
}

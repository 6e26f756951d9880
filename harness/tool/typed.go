package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/dageval/dageval/harness/llm"
)

// Schema is a resolved JSON Schema that validates tool arguments.
type Schema struct {
	raw      json.RawMessage
	resolved *jsonschema.Resolved
	quick    *quickCheck // nil unless the schema is flat
	lazy     *lazySchema // set by BuiltinSchema until Validate needs the parsed form
}

// lazySchema parses a built-in document on first use.
type lazySchema struct {
	once sync.Once
	raw  json.RawMessage
	s    *Schema
}

func (l *lazySchema) get() *Schema {
	l.once.Do(func() {
		s, err := ParseSchema(l.raw)
		if err != nil {
			panic(fmt.Sprintf("tool: built-in schema %s: %v", l.raw, err))
		}
		l.s = s
	})
	return l.s
}

// BuiltinSchema is ParseSchema for a document compiled into the program,
// which the tests of the package holding it parse: it is parsed and
// resolved when it first validates arguments rather than now, since
// assembling an agent (dageval assemble, snapshot tests) shows the model
// its tools' schemas but validates no arguments, and parsing them was a
// large part of a short command's time. JSON is the compacted document at
// once. An invalid document makes that first Validate panic.
func BuiltinSchema(raw json.RawMessage) *Schema {
	return &Schema{raw: compact(raw), lazy: &lazySchema{raw: raw}}
}

// Resolved schemas are immutable and safe for concurrent use, so equal
// documents share one: agents assembled again and again (every subagent, every
// test) would otherwise parse and resolve the same tool schemas each time,
// which dominates the cost of assembling an agent.
var (
	parsedMu        sync.RWMutex
	parsedSchemas   = map[string]*Schema{} // keyed by the document's bytes
	inferredSchemas sync.Map               // reflect.Type → *Schema
)

// maxParsedSchemas bounds the cache of parsed documents, so a program that
// makes up schemas on the fly (per-call response formats) cannot grow it
// without limit; later documents are parsed every time.
const maxParsedSchemas = 4096

// ParseSchema parses and resolves a JSON Schema document. The result must
// not be modified; equal documents may return the same *Schema.
func ParseSchema(raw json.RawMessage) (*Schema, error) {
	parsedMu.RLock()
	cached, ok := parsedSchemas[string(raw)] // no copy of raw for the lookup
	parsedMu.RUnlock()
	if ok {
		return cached, nil
	}
	s, err := parseSchema(raw)
	if err != nil {
		return nil, err
	}
	parsedMu.Lock()
	defer parsedMu.Unlock()
	if prev, ok := parsedSchemas[string(raw)]; ok {
		return prev, nil
	}
	if len(parsedSchemas) < maxParsedSchemas {
		parsedSchemas[string(raw)] = s
	}
	return s, nil
}

func parseSchema(raw json.RawMessage) (*Schema, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage(`{"type":"object","properties":{}}`)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("parse JSON Schema: %w", err)
	}
	r, err := s.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("resolve JSON Schema: %w", err)
	}
	raw = compact(raw)
	return &Schema{raw: raw, resolved: r, quick: newQuickCheck(raw)}, nil
}

// SchemaFor infers the JSON Schema of the Go type T from its json and
// jsonschema struct tags (the jsonschema tag is the property description).
// The schema is inferred once per type; the result must not be modified.
func SchemaFor[T any]() (*Schema, error) {
	t := reflect.TypeFor[T]()
	if cached, ok := inferredSchemas.Load(t); ok {
		return cached.(*Schema), nil
	}
	s, err := inferSchema[T]()
	if err != nil {
		return nil, err
	}
	actual, _ := inferredSchemas.LoadOrStore(t, s)
	return actual.(*Schema), nil
}

func inferSchema[T any]() (*Schema, error) {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		return nil, fmt.Errorf("infer JSON Schema of %v: %w", reflect.TypeFor[T](), err)
	}
	raw, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	r, err := s.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("resolve JSON Schema of %v: %w", reflect.TypeFor[T](), err)
	}
	return &Schema{raw: raw, resolved: r, quick: newQuickCheck(raw)}, nil
}

// JSON returns the schema document; callers must not modify it.
func (s *Schema) JSON() json.RawMessage { return s.raw }

// Validate checks a JSON arguments document against the schema and returns a
// message the model can act on when it does not conform.
func (s *Schema) Validate(args json.RawMessage) error {
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage("{}")
	}
	if s.lazy != nil {
		s = s.lazy.get()
	}
	if s.quick != nil && s.quick.valid(args) {
		return nil
	}
	var v any
	if err := json.Unmarshal(args, &v); err != nil {
		return fmt.Errorf("arguments are not valid JSON: %v", err)
	}
	if err := s.resolved.Validate(v); err != nil {
		return err
	}
	return nil
}

func compact(raw json.RawMessage) json.RawMessage {
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return raw
	}
	return buf.Bytes()
}

// Typed is a tool whose arguments are decoded into A after validation against
// the schema inferred from A.
type Typed[A any] struct {
	spec   llm.ToolSpec
	schema *Schema
	fn     func(ctx context.Context, args A) (Result, error)
}

// New builds a tool from a function returning text. The argument schema is
// inferred from A; invalid arguments never reach fn.
func New[A any](name, description string, fn func(ctx context.Context, args A) (string, error)) (*Typed[A], error) {
	return NewResult(name, description, func(ctx context.Context, args A) (Result, error) {
		s, err := fn(ctx, args)
		if err != nil {
			return Result{}, err
		}
		return Text(s), nil
	})
}

// NewResult is New for functions that build the full Result themselves.
func NewResult[A any](name, description string, fn func(ctx context.Context, args A) (Result, error)) (*Typed[A], error) {
	if name == "" {
		return nil, errors.New("tool name is empty")
	}
	schema, err := SchemaFor[A]()
	if err != nil {
		return nil, fmt.Errorf("tool %s: %w", name, err)
	}
	return &Typed[A]{
		spec:   llm.ToolSpec{Name: name, Description: description, Parameters: schema.JSON()},
		schema: schema,
		fn:     fn,
	}, nil
}

// Must panics if a tool could not be built; for package-level tool definitions
// whose schema is fixed at compile time.
func Must[T Tool](t T, err error) T {
	if err != nil {
		panic(err)
	}
	return t
}

// Spec implements Tool.
func (t *Typed[A]) Spec() llm.ToolSpec { return t.spec }

// Call validates and decodes the arguments, then runs the function. Invalid
// arguments and panics become error results rather than crashing the agent.
func (t *Typed[A]) Call(ctx context.Context, raw json.RawMessage) (res Result, err error) {
	if verr := t.schema.Validate(raw); verr != nil {
		return InvalidArgs(t.spec.Name, verr), nil
	}
	var args A
	if len(bytes.TrimSpace(raw)) > 0 {
		if derr := json.Unmarshal(raw, &args); derr != nil {
			return InvalidArgs(t.spec.Name, derr), nil
		}
	}
	defer func() {
		if p := recover(); p != nil {
			res = Errorf("Error: tool %s failed: panic: %v", t.spec.Name, p)
			err = nil
		}
	}()
	return t.fn(ctx, args)
}

// InvalidArgs is the error result for arguments that do not match a tool's schema.
func InvalidArgs(name string, err error) Result {
	return Errorf("Error: invalid arguments for tool %s: %v. Fix the arguments and call the tool again.", name, err)
}

// Validated wraps a raw tool so its arguments are checked against its spec's
// schema before it runs. It fails if the schema itself is invalid.
func Validated(t Tool) (Tool, error) {
	s, err := ParseSchema(t.Spec().Parameters)
	if err != nil {
		return nil, fmt.Errorf("tool %s: %w", t.Spec().Name, err)
	}
	return &validated{Tool: t, schema: s}, nil
}

// ValidatedBy is Validated with the schema given, for a tool whose spec's
// schema is a BuiltinSchema's document.
func ValidatedBy(t Tool, s *Schema) Tool { return &validated{Tool: t, schema: s} }

type validated struct {
	Tool
	schema *Schema
}

func (v *validated) Call(ctx context.Context, raw json.RawMessage) (Result, error) {
	if err := v.schema.Validate(raw); err != nil {
		return InvalidArgs(v.Tool.Spec().Name, err), nil
	}
	return v.Tool.Call(ctx, raw)
}

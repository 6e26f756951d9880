package evals

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"text/template"
	"text/template/parse"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"

	"github.com/dageval/dageval/internal/yamlx"
)

// A dataset entry of a suite's cases reads cases from a JSONL or CSV file:
//
//	cases:
//	  - file: cases/weather.jsonl         # one case per line (or per CSV row)
//	    input: "What is the weather in {{city}}?"
//	    checks:
//	      - final_answer: {contains: "{{expected}}"}
//
// Every key but file is a template of the dataset's cases; a row's own case
// keys (id, input, files, tools, rubric, checks, epochs, tags, models) win
// over it, and every other key of the row is a var. {{var}} is replaced in
// every string of the case, map keys included.
//
// Templates are Go's text/template with each var defined as a function,
// which keeps promptfoo's {{city}} spelling (text/template itself would
// want {{.city}}) while a var the row does not have is an error naming the
// row, not an empty string. Pipelines work as usual: {{city | printf "%q"}}.
// A string that is only {{var}} takes the var's value with its type, so
// epochs: "{{n}}" can be a number.

// datasetCaseKeys are the keys of a row (or a template) that set the case.
var datasetCaseKeys = []string{"id", "input", "files", "tools", "rubric", "checks", "expect", "epochs", "tags", "models", "agent", "messages"}

// varName is what a var must look like to be written {{name}}.
var varName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })

// wholeVar matches a string that is a single {{var}}.
var wholeVar = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\{\{-?\s*([A-Za-z_][A-Za-z0-9_]*)\s*-?\}\}$`) })

// datasetRow is one row of a dataset: the line it starts on, the case keys
// it sets and its vars.
type datasetRow struct {
	line   int
	fields map[string]any
	vars   map[string]any
}

// dataset reads the dataset entry at key at (entry index of the suite's
// cases) and adds its cases, recording every problem.
func (p *parser) dataset(item ast.Node, at string, index int) {
	m := item.(ast.MapNode)
	tmpl := map[string]ast.Node{}
	var file string
	it := m.MapRange()
	for it.Next() {
		k := it.Key().GetToken().Value
		switch {
		case k == "file":
			s, ok := it.Value().(*ast.StringNode)
			if !ok || strings.TrimSpace(s.Value) == "" {
				p.fail(p.errAt(sub(at, "file"), "want the dataset's path (a .jsonl or .csv file), got %s", yamlx.Kind(it.Value())))
				return
			}
			file = s.Value
		case slices.Contains(datasetCaseKeys, k):
			tmpl[k] = it.Value()
		default:
			p.fail(p.errAt(sub(at, k), "unknown key %q in a dataset entry (known keys: file, %s)", k, strings.Join(datasetCaseKeys, ", ")))
			return
		}
	}
	if err := p.checkTemplates(tmpl, at); err != nil {
		p.fail(err)
		return
	}
	base := map[string]any{}
	for k, n := range tmpl {
		var v any
		if err := yaml.NodeToValue(n, &v); err != nil {
			p.fail(p.errAt(sub(at, k), "%v", err))
			return
		}
		base[k] = v
	}
	path := p.resolve(file)
	rows, err := readDataset(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			p.fail(p.errAt(sub(at, "file"), "dataset file %s does not exist", path))
		} else {
			p.fail(err)
		}
		return
	}
	if len(rows) == 0 {
		p.fail(p.errAt(sub(at, "file"), "dataset file %s has no rows", path))
		return
	}
	stem := unsafeID().ReplaceAllString(strings.TrimSuffix(filepath.Base(path), filepath.Ext(path)), "-")
	for n, row := range rows {
		c, err := p.datasetCase(path, stem, n+1, row, base, index)
		if err != nil {
			p.fail(err)
			continue
		}
		where := fmt.Sprintf("%s:%d", path, row.line)
		p.addCase(c, where, func(prev string) error {
			return &yamlx.Error{File: path, Line: row.line, Key: "id", Msg: fmt.Sprintf("duplicate case id %q (also %s)", c.ID, prev)}
		})
	}
}

// checkTemplates reports a template with a syntax error at its place in the
// suite, once rather than for every row.
func (p *parser) checkTemplates(tmpl map[string]ast.Node, at string) error {
	for _, k := range slices.Sorted(maps.Keys(tmpl)) {
		var err error
		walkStrings(tmpl[k], func(n ast.Node, s string) bool {
			if !strings.Contains(s, "{{") {
				return true
			}
			t := parse.New("template")
			t.Mode = parse.SkipFuncCheck
			if _, perr := t.Parse(s, "{{", "}}", map[string]*parse.Tree{}); perr != nil {
				e := p.doc.At(n, "invalid template: %s", strings.TrimPrefix(perr.Error(), "template: template:"))
				if e.Key == "" {
					e.Key = sub(at, k)
				}
				err = e
				return false
			}
			return true
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// walkStrings calls fn on every string scalar and mapping key under n
// until fn returns false.
func walkStrings(n ast.Node, fn func(ast.Node, string) bool) bool {
	switch x := n.(type) {
	case *ast.StringNode:
		return fn(x, x.Value)
	case *ast.LiteralNode:
		return fn(x, x.Value.Value)
	case *ast.MappingNode:
		for _, v := range x.Values {
			if !walkStrings(v, fn) {
				return false
			}
		}
	case *ast.MappingValueNode:
		return walkStrings(x.Key, fn) && walkStrings(x.Value, fn)
	case *ast.SequenceNode:
		for _, v := range x.Values {
			if !walkStrings(v, fn) {
				return false
			}
		}
	case *ast.TagNode:
		return walkStrings(x.Value, fn)
	case *ast.AnchorNode:
		return walkStrings(x.Value, fn)
	}
	return true
}

// datasetCase builds the n-th case of the dataset at path from its row.
// The case is checked as an inline case would be; problems are reported at
// the row (path:line: key: …).
func (p *parser) datasetCase(path, stem string, n int, row datasetRow, base map[string]any, index int) (*Case, error) {
	atRow := func(key, format string, args ...any) error {
		return &yamlx.Error{File: path, Line: row.line, Key: key, Msg: fmt.Sprintf(format, args...)}
	}
	val := map[string]any{}
	for k, v := range base {
		val[k] = v
	}
	maps.Copy(val, row.fields)
	funcs := template.FuncMap{}
	for name, v := range row.vars {
		if varName().MatchString(name) {
			text := varText(v)
			funcs[name] = func() string { return text }
		}
	}
	for _, k := range slices.Sorted(maps.Keys(val)) {
		out, err := render(val[k], k, row.vars, funcs)
		if err != nil {
			var re *renderError
			if errors.As(err, &re) {
				return nil, atRow(re.key, "%s", re.msg)
			}
			return nil, atRow(k, "%v", err)
		}
		val[k] = out
	}
	if _, ok := val["id"]; !ok {
		val["id"] = fmt.Sprintf("%s-%d", stem, n)
	}
	data, err := yaml.Marshal(val)
	if err != nil {
		return nil, atRow("", "%v", err)
	}
	// The case is read as a small YAML document of its own so that it is
	// checked exactly like an inline case; its errors are then moved to
	// the row.
	synth := fmt.Sprintf("%s#row%d", path, row.line)
	doc, err := yamlx.Parse(synth, data)
	if err != nil {
		return nil, atRow("", "%v", err)
	}
	toRow := func(err error) error {
		var ye *yamlx.Error
		if errors.As(err, &ye) && ye.File == synth {
			return atRow(ye.Key, "%s", ye.Msg)
		}
		return err
	}
	var rc rawCase
	if err := doc.Decode(&rc); err != nil {
		return nil, toRow(err)
	}
	rp := &parser{doc: doc, s: p.s, reg: p.reg, broken: p.broken}
	c, err := rp.caseFrom(&rc, "", index)
	if err != nil {
		return nil, toRow(err)
	}
	c.Source = fmt.Sprintf("%s:%d", path, row.line)
	c.row = &yamlx.Error{File: path, Line: row.line}
	return c, nil
}

// renderError is a template that failed for a row, at a key of the case.
type renderError struct{ key, msg string }

func (e *renderError) Error() string { return e.key + ": " + e.msg }

// render replaces the vars in every string of v (a value decoded from YAML
// or JSON); key is v's path in the case, for errors.
func render(v any, key string, vars map[string]any, funcs template.FuncMap) (any, error) {
	switch x := v.(type) {
	case string:
		if !strings.Contains(x, "{{") {
			return x, nil
		}
		if m := wholeVar().FindStringSubmatch(x); m != nil {
			if val, ok := vars[m[1]]; ok {
				if _, isString := val.(string); !isString {
					return val, nil
				}
			}
		}
		t, err := template.New("").Funcs(funcs).Option("missingkey=error").Parse(x)
		if err != nil {
			return nil, &renderError{key, templateProblem(err, x, vars)}
		}
		var b strings.Builder
		if err := t.Execute(&b, nil); err != nil {
			return nil, &renderError{key, templateProblem(err, x, vars)}
		}
		return b.String(), nil
	case map[string]any:
		out := make(map[string]any, len(x))
		for _, k := range slices.Sorted(maps.Keys(x)) {
			nk, err := render(k, key, vars, funcs)
			if err != nil {
				return nil, err
			}
			ks, ok := nk.(string)
			if !ok {
				ks = varText(nk)
			}
			nv, err := render(x[k], sub(key, k), vars, funcs)
			if err != nil {
				return nil, err
			}
			out[ks] = nv
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			nv, err := render(e, fmt.Sprintf("%s[%d]", key, i), vars, funcs)
			if err != nil {
				return nil, err
			}
			out[i] = nv
		}
		return out, nil
	}
	return v, nil
}

// undefinedFunc finds the name text/template reports for an unknown function.
var undefinedFunc = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`function "([^"]+)" not defined`) })

// templateProblem rewrites a text/template error for the row's author: an
// undefined function is a var the row does not have.
func templateProblem(err error, text string, vars map[string]any) string {
	if m := undefinedFunc().FindStringSubmatch(err.Error()); m != nil {
		have := slices.Sorted(maps.Keys(vars))
		list := strings.Join(have, ", ")
		if list == "" {
			list = "none"
		}
		return fmt.Sprintf("%q uses {{%s}}, but the row has no var %s (its vars: %s)", text, m[1], m[1], list)
	}
	msg := err.Error()
	if i := strings.LastIndex(msg, ": "); i >= 0 && strings.HasPrefix(msg, "template: ") {
		msg = msg[i+2:]
	}
	return fmt.Sprintf("template %q: %s", text, msg)
}

// varText is a var as text: a string as is, anything else as JSON.
func varText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(raw)
}

// readDataset reads a .jsonl (or .ndjson) or .csv file into rows.
func readDataset(path string) ([]datasetRow, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	switch strings.ToLower(filepath.Ext(path)) {
	case ".jsonl", ".ndjson":
		return readJSONL(path, data)
	case ".csv":
		return readCSV(path, data)
	}
	return nil, &yamlx.Error{File: path, Msg: "unknown dataset format: want a .jsonl file (one JSON object per line) or a .csv file with a header row"}
}

func readJSONL(path string, data []byte) ([]datasetRow, error) {
	var rows []datasetRow
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for line := 1; sc.Scan(); line++ {
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(text))
		dec.UseNumber()
		var obj map[string]any
		if err := dec.Decode(&obj); err != nil || dec.More() {
			msg := "not a JSON object"
			if err != nil {
				msg += ": " + err.Error()
			}
			return nil, &yamlx.Error{File: path, Line: line, Msg: msg}
		}
		row := datasetRow{line: line, fields: map[string]any{}, vars: map[string]any{}}
		for k, v := range obj {
			v = numbers(v)
			switch {
			case k == "vars":
				vm, ok := v.(map[string]any)
				if !ok {
					return nil, &yamlx.Error{File: path, Line: line, Key: "vars", Msg: "want an object of var names to values"}
				}
				maps.Copy(row.vars, vm)
			case slices.Contains(datasetCaseKeys, k):
				row.fields[k] = v
			default:
				row.vars[k] = v
			}
		}
		rows = append(rows, row)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return rows, nil
}

// numbers turns json.Numbers into int64 or float64, the types YAML values
// decode to, so that a row's epochs: 2 reads as a number.
func numbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	case map[string]any:
		for k, e := range x {
			x[k] = numbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = numbers(e)
		}
	}
	return v
}

// readCSV reads a CSV file whose first row names the columns: id, input
// and tags (separated by spaces or commas) set the case, every other column
// is a var.
func readCSV(path string, data []byte) ([]datasetRow, error) {
	r := csv.NewReader(bytes.NewReader(data))
	header, err := r.Read()
	if err == io.EOF {
		return nil, nil
	}
	if err != nil {
		return nil, csvError(path, err)
	}
	for i, h := range header {
		header[i] = strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))
	}
	var rows []datasetRow
	for {
		rec, err := r.Read()
		if err == io.EOF {
			return rows, nil
		}
		if err != nil {
			return nil, csvError(path, err)
		}
		line, _ := r.FieldPos(0)
		row := datasetRow{line: line, fields: map[string]any{}, vars: map[string]any{}}
		for i, v := range rec {
			switch h := header[i]; h {
			case "id", "input":
				row.fields[h] = v
			case "tags":
				var tags []any
				for _, t := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' }) {
					tags = append(tags, t)
				}
				row.fields[h] = tags
			default:
				row.vars[h] = v
			}
		}
		rows = append(rows, row)
	}
}

func csvError(path string, err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return &yamlx.Error{File: path, Line: pe.Line, Column: pe.Column, Msg: pe.Err.Error()}
	}
	return fmt.Errorf("%s: %w", path, err)
}

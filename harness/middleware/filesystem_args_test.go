package middleware

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/tool"
)

// editArgs and readArgs are the argument structs of edit_file and
// read_file, every kind of field decodeFields reads.
type editArgs struct {
	FilePath   string `json:"file_path"`
	OldString  string `json:"old_string"`
	NewString  string `json:"new_string"`
	ReplaceAll bool   `json:"replace_all"`
}

type readArgs struct {
	FilePath string `json:"file_path"`
	Offset   int    `json:"offset"`
	Limit    *int   `json:"limit"`
}

// FuzzDecodeMatchesEncodingJSON holds decode to what a tool.Validated
// tool decoding with encoding/json does: for any arguments, the same
// struct or the same error text.
func FuzzDecodeMatchesEncodingJSON(f *testing.F) {
	for _, s := range []string{
		``, `{}`, `null`, `{"file_path":"/a.md"}`, `{"file_path":"/a","offset":10,"limit":-1}`, `{"file_path":"/a","limit":null}`,
		`{"file_path":"/a","offset":1.5}`, `{"file_path":"/a","offset":1e2}`, `{"file_path":"/a","offset":99999999999999999999}`,
		`{"FILE_PATH":"/a"}`, `{"file_path":"/a","file_path":"/b"}`, `{"file_path":"a\nb\"c\u00e9"}`, "{\"file_path\":\"\xff\"}",
		`{"file_path":"/a","old_string":"x","new_string":"y","replace_all":true}`, `{"replace_all":"true"}`, `{"file_path":3}`,
		`{"file_path":"/a","extra":[1,{"x":null}]}`, ` { "file_path" : "/a" } `, `{"file_path":"/a"`, `[]`, `{"old_string":"x","new_string":"y"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var e, ewant editArgs
		r1 := decode(ToolEditFile, raw, &e, needArg("file_path", &e.FilePath), needArg("old_string", &e.OldString), needArg("new_string", &e.NewString), boolArg("replace_all", &e.ReplaceAll))
		want1 := validatedDecode(t, ToolEditFile, raw, &ewant)
		if got := resultText(r1); got != want1 || r1 == nil && e != ewant {
			t.Fatalf("edit_file %q: decode gives %+v (%q), tool.Validated and encoding/json %+v (%q)", raw, e, got, ewant, want1)
		}
		var r, rwant readArgs
		r2 := decode(ToolReadFile, raw, &r, needArg("file_path", &r.FilePath), intArg("offset", &r.Offset), optArg("limit", &r.Limit))
		want2 := validatedDecode(t, ToolReadFile, raw, &rwant)
		if got := resultText(r2); got != want2 || r2 == nil && !reflect.DeepEqual(r, rwant) {
			t.Fatalf("read_file %q: decode gives %+v (%q), tool.Validated and encoding/json %+v (%q)", raw, r, got, rwant, want2)
		}
	})
}

// validatedDecode is the path decode short-cuts: the schema's validation,
// then encoding/json. It returns the error text, "" when there is none.
func validatedDecode(t *testing.T, name string, raw []byte, dst any) string {
	s, err := tool.ParseSchema(toolParams[name])
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(raw); err != nil {
		return tool.InvalidArgs(name, err).Text()
	}
	if err := unmarshalArgs(raw, dst); err != nil {
		return invalidText(name, err)
	}
	return ""
}

func resultText(r *tool.Result) string {
	if r == nil {
		return ""
	}
	return r.Text()
}

func unmarshalArgs(raw []byte, dst any) error {
	if len(raw) == 0 {
		raw = []byte("{}")
	}
	return json.Unmarshal(raw, dst)
}

func invalidText(name string, err error) string {
	return "Error: invalid arguments for tool " + name + ": " + err.Error() + ". Fix the arguments and call the tool again."
}

// FuzzNumberedRowsRender holds numberedRows and renderRows to the plain
// way of writing them (split, then pad each marker): the same rows, the
// same text.
func FuzzNumberedRowsRender(f *testing.F) {
	for _, s := range []string{"", "\n", "a", "a\n", "a\n\n", "\n\nb", strings.Repeat("é", 2*maxLineLength+3) + "\nx\n"} {
		f.Add(s, 1)
	}
	f.Fuzz(func(t *testing.T, content string, start int) {
		start = start%100000 + 1
		if start < 1 {
			start += 100000
		}
		rows := numberedRows(content, start)
		lines := strings.Split(content, "\n")
		if lines[len(lines)-1] == "" {
			lines = lines[:len(lines)-1]
		}
		var want []row
		for i, line := range lines {
			for part := 0; ; part++ {
				cut := runeOffset(line, maxLineLength)
				if utf8.RuneCountInString(line) <= maxLineLength {
					cut = len(line)
				}
				want = append(want, row{line: start + i, part: part, text: line[:cut]})
				if line = line[cut:]; line == "" {
					break
				}
			}
		}
		if len(rows) != len(want) || len(rows) > 0 && !reflect.DeepEqual(rows, want) {
			t.Fatalf("numberedRows(%q) = %v, want %v", content, rows, want)
		}
		width := 0
		for _, r := range rows {
			width = max(width, len(r.marker()))
		}
		var out []string
		for _, r := range rows {
			out = append(out, strings.Repeat(" ", width-len(r.marker()))+r.marker()+"  "+r.text)
		}
		if got := renderRows(rows); got != strings.Join(out, "\n") {
			t.Fatalf("renderRows(%v) = %q, want %q", rows, got, strings.Join(out, "\n"))
		}
	})
}

// TestVisibleToolsFollowTheOffer checks that the kept tool list is only
// handed out again for an equal offer: a different list, or the same list
// with a tool changed, is derived afresh.
func TestVisibleToolsFollowTheOffer(t *testing.T) {
	m, err := NewFilesystem(FilesystemOptions{})
	if err != nil {
		t.Fatal(err)
	}
	spec := func(name, desc string) llm.ToolSpec {
		return llm.ToolSpec{Name: name, Description: desc, Parameters: json.RawMessage(`{"type":"object"}`)}
	}
	names := func(ts []llm.ToolSpec) (out []string) {
		for _, t := range ts {
			out = append(out, t.Name+":"+t.Description)
		}
		return out
	}
	a := []llm.ToolSpec{spec(ToolReadFile, "r"), spec(ToolExecute, executeDescription(true, true)), spec(ToolGrep, grepDescription(true))}
	want := []string{ToolReadFile + ":r", ToolGrep + ":" + grepDescription(false)}
	for range 2 {
		if got, exec := m.visibleTools(a); !reflect.DeepEqual(names(got), want) || exec {
			t.Fatalf("visibleTools(a) = %v, %v; want %v, false", names(got), exec, want)
		}
	}
	b := slices.Clone(a)
	b[0].Description = "changed"
	if got, _ := m.visibleTools(b); names(got)[0] != ToolReadFile+":changed" {
		t.Fatalf("a changed description was not seen: %v", names(got))
	}
	if got, _ := m.visibleTools(a[:1]); len(got) != 1 {
		t.Fatalf("a shorter offer was not seen: %v", names(got))
	}
	b[0].CacheControl = llm.Ephemeral()
	if got, _ := m.visibleTools(b); got[0].CacheControl == nil {
		t.Fatalf("a cache marker was not seen: %v", got)
	}
}

package middleware

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/dageval/dageval/harness/llm"
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

// FuzzDecodeMatchesEncodingJSON holds decode's fast path to encoding/json:
// for any arguments, the same struct or the same error.
func FuzzDecodeMatchesEncodingJSON(f *testing.F) {
	for _, s := range []string{
		``, `{}`, `null`, `{"file_path":"/a.md"}`, `{"file_path":"/a","offset":10,"limit":-1}`, `{"file_path":"/a","limit":null}`,
		`{"file_path":"/a","offset":1.5}`, `{"file_path":"/a","offset":1e2}`, `{"file_path":"/a","offset":99999999999999999999}`,
		`{"FILE_PATH":"/a"}`, `{"file_path":"/a","file_path":"/b"}`, `{"file_path":"a\nb\"c\u00e9"}`, "{\"file_path\":\"\xff\"}",
		`{"file_path":"/a","old_string":"x","new_string":"y","replace_all":true}`, `{"replace_all":"true"}`, `{"file_path":3}`,
		`{"file_path":"/a","extra":[1,{"x":null}]}`, ` { "file_path" : "/a" } `, `{"file_path":"/a"`, `[]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var e, ewant editArgs
		r1 := decode("edit_file", raw, &e, strArg("file_path", &e.FilePath), strArg("old_string", &e.OldString), strArg("new_string", &e.NewString), boolArg("replace_all", &e.ReplaceAll))
		err1 := unmarshalArgs(raw, &ewant)
		if (r1 != nil) != (err1 != nil) || r1 == nil && e != ewant {
			t.Fatalf("edit_file %q: decode gives %+v (%v), encoding/json %+v (%v)", raw, e, r1, ewant, err1)
		}
		var r, rwant readArgs
		r2 := decode("read_file", raw, &r, strArg("file_path", &r.FilePath), intArg("offset", &r.Offset), optArg("limit", &r.Limit))
		err2 := unmarshalArgs(raw, &rwant)
		if (r2 != nil) != (err2 != nil) || r2 == nil && !reflect.DeepEqual(r, rwant) {
			t.Fatalf("read_file %q: decode gives %+v (%v), encoding/json %+v (%v)", raw, r, r2, rwant, err2)
		}
		if r1 != nil && r1.Text() != invalidText("edit_file", err1) || r2 != nil && r2.Text() != invalidText("read_file", err2) {
			t.Fatalf("%q: the error results differ from encoding/json's", raw)
		}
	})
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

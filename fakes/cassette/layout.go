package cassette

import (
	"bytes"
	"encoding/json"

	vcr "gopkg.in/dnaeon/go-vcr.v4/pkg/cassette"
)

// JSONIndented is the Meta.JSONBodies of a cassette whose JSON bodies are
// stored indented, one field a line, so that a changed prompt or tool
// changes the lines that hold it rather than a whole body's one line.
// Reading such a file compacts the bodies back to the bytes that were sent
// and received; a file without the note (an older one, or one written by
// another tool) is read as it is.
const JSONIndented = "indented"

// indentBodies returns copies of the interactions with every compact JSON
// body indented. Other bodies (event streams, text, JSON a server sent
// indented already) are kept byte for byte.
func indentBodies(its []*vcr.Interaction) []*vcr.Interaction {
	out := make([]*vcr.Interaction, len(its))
	for i, it := range its {
		cp := *it
		cp.Request.Body = indentJSON(cp.Request.Body)
		cp.Response.Body = indentJSON(cp.Response.Body)
		out[i] = &cp
	}
	return out
}

// compactBodies undoes indentBodies in place: a body that is exactly the
// indented form of some JSON becomes that JSON, compact.
func compactBodies(its []*vcr.Interaction) {
	for _, it := range its {
		if it == nil {
			continue
		}
		it.Request.Body = compactJSON(it.Request.Body)
		it.Response.Body = compactJSON(it.Response.Body)
	}
}

// jsonDoc reports whether s may be a JSON object or array worth a line per
// field (scalars and empty bodies stay as they are).
func jsonDoc(s string) bool {
	return len(s) > 2 && (s[0] == '{' || s[0] == '[') && json.Valid([]byte(s))
}

func indentJSON(s string) string {
	if !jsonDoc(s) {
		return s
	}
	var c bytes.Buffer
	if json.Compact(&c, []byte(s)) != nil || c.String() != s {
		return s // not compact: indenting would not read back as it was
	}
	var b bytes.Buffer
	if json.Indent(&b, []byte(s), "", "  ") != nil {
		return s
	}
	return b.String()
}

func compactJSON(s string) string {
	if !jsonDoc(s) {
		return s
	}
	var c bytes.Buffer
	if json.Compact(&c, []byte(s)) != nil {
		return s
	}
	var b bytes.Buffer
	if json.Indent(&b, c.Bytes(), "", "  ") != nil || b.String() != s {
		return s // not what indentJSON writes: a body recorded as it is
	}
	return c.String()
}

package rubrics

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/agnivade/levenshtein"

	"github.com/dageval/dageval/harness/tool"
)

// zeroWidth are the invisible characters stripped from model text before
// a text check compares it: models put them into paths and URLs (to stop
// auto-linking), which would make a literal "/a.txt" fail to match. The
// set is Deep Agents' (its evals strip the same four).
var zeroWidth = strings.NewReplacer("\u200b", "", "\u200c", "", "\u200d", "", "\ufeff", "")

// StripZeroWidth removes zero-width spaces, joiners and byte-order marks.
func StripZeroWidth(s string) string { return zeroWidth.Replace(s) }

// TextMatch holds the conditions a text check applies to one text (the
// final answer, an assistant message, a tool result). Each condition that
// is set must hold; the score is the share that hold. Zero-width
// characters are stripped from the text and from the expected values first.
type TextMatch struct {
	Contains []string `json:"contains,omitempty"`
	// ContainsAny holds when at least one of its texts appears.
	ContainsAny []string `json:"contains_any,omitempty"`
	NotContains []string `json:"not_contains,omitempty"`
	StartsWith  string   `json:"starts_with,omitempty"`
	// Regex must match somewhere in the text (RE2 syntax).
	Regex string `json:"regex,omitempty"`
	// Equals must equal the text, ignoring surrounding whitespace.
	Equals *string `json:"equals,omitempty"`
	// JSONSchema must validate the text parsed as JSON (a single
	// surrounding Markdown code fence is removed first).
	JSONSchema json.RawMessage `json:"json_schema,omitempty"`
	// IsJSON: the whole text (without a code fence) is JSON.
	IsJSON bool `json:"is_json,omitempty"`
	// ContainsJSON: a JSON object or array appears somewhere in the text;
	// with ContainsJSONSchema, one that the schema validates.
	ContainsJSON       bool            `json:"contains_json,omitempty"`
	ContainsJSONSchema json.RawMessage `json:"contains_json_schema,omitempty"`
	// IsXML: the text (without a code fence) is one well-formed XML document.
	IsXML bool `json:"is_xml,omitempty"`
	// IsSQL: the text (without a code fence) parses as SQL statements (the
	// MySQL dialect of Vitess's parser).
	IsSQL bool `json:"is_sql,omitempty"`
	// Levenshtein bounds the edit distance to a value.
	Levenshtein *LevenshteinMatch `json:"levenshtein,omitempty"`
	// RougeN and BLEU compare the text with a reference.
	RougeN *RougeMatch `json:"rouge_n,omitempty"`
	BLEU   *BLEUMatch  `json:"bleu,omitempty"`
	// IgnoreCase makes Contains, ContainsAny, NotContains, StartsWith and
	// Equals case-insensitive.
	IgnoreCase bool `json:"ignore_case,omitempty"`
}

// LevenshteinMatch holds when the edit distance between the text and Value
// (in Unicode code points) is at most MaxDistance.
type LevenshteinMatch struct {
	Value string `json:"value"`
	// MaxDistance is the most edits allowed; nil means DefaultMaxDistance.
	MaxDistance *int `json:"max_distance,omitempty"`
}

// RougeMatch holds when ROUGE-N recall of the text against Reference is at
// least Threshold (0.75 when 0, as in promptfoo); N is 1 when 0.
type RougeMatch struct {
	Reference string  `json:"reference"`
	N         int     `json:"n,omitempty"`
	Threshold float64 `json:"threshold,omitempty"`
}

// BLEUMatch holds when the BLEU-4 score of the text against Reference is at
// least Threshold (0.5 when 0, as in promptfoo).
type BLEUMatch struct {
	Reference string  `json:"reference"`
	Threshold float64 `json:"threshold,omitempty"`
}

// Defaults of the similarity conditions, promptfoo's.
const (
	DefaultMaxDistance    = 5
	DefaultRougeThreshold = 0.75
	DefaultBLEUThreshold  = 0.5
)

// IsZero reports whether no condition is set.
func (m *TextMatch) IsZero() bool {
	return len(m.Contains) == 0 && len(m.ContainsAny) == 0 && len(m.NotContains) == 0 && m.StartsWith == "" &&
		m.Regex == "" && m.Equals == nil && len(m.JSONSchema) == 0 && !m.IsJSON && !m.ContainsJSON &&
		len(m.ContainsJSONSchema) == 0 && !m.IsXML && !m.IsSQL && m.Levenshtein == nil && m.RougeN == nil && m.BLEU == nil
}

// textConditionNames lists the condition keys, for messages.
const textConditionNames = "contains, contains_any, not_contains, starts_with, regex, equals, json_schema, is_json, contains_json, is_xml, is_sql, levenshtein, rouge_n, bleu"

// Validate checks that a condition is set and that expressions, schemas
// and thresholds are valid.
func (m *TextMatch) Validate() error {
	if m.IsZero() {
		return errors.New("needs at least one of " + textConditionNames)
	}
	if m.Regex != "" {
		if _, err := regexp.Compile(m.Regex); err != nil {
			return fmt.Errorf("regex: %v", err)
		}
	}
	for key, s := range map[string]json.RawMessage{"json_schema": m.JSONSchema, "contains_json.schema": m.ContainsJSONSchema} {
		if len(s) > 0 {
			if _, err := tool.ParseSchema(s); err != nil {
				return fmt.Errorf("%s: %v", key, err)
			}
		}
	}
	if l := m.Levenshtein; l != nil && l.MaxDistance != nil && *l.MaxDistance < 0 {
		return errors.New("levenshtein.max_distance cannot be negative")
	}
	if r := m.RougeN; r != nil {
		if r.N < 0 || r.N > 4 {
			return fmt.Errorf("rouge_n.n must be between 1 and 4, got %d", r.N)
		}
		if r.Threshold < 0 || r.Threshold > 1 {
			return fmt.Errorf("rouge_n.threshold must be in (0, 1], got %v", r.Threshold)
		}
	}
	if b := m.BLEU; b != nil && (b.Threshold < 0 || b.Threshold > 1) {
		return fmt.Errorf("bleu.threshold must be in (0, 1], got %v", b.Threshold)
	}
	return nil
}

// match applies the conditions to text and returns how many hold, of how
// many, and what each failing one found.
func (m *TextMatch) match(text string) (held, total int, failed []string) {
	text = StripZeroWidth(text)
	fold := func(s string) string {
		s = StripZeroWidth(s)
		if m.IgnoreCase {
			return strings.ToLower(s)
		}
		return s
	}
	cond := func(ok bool, what string) {
		total++
		if ok {
			held++
		} else {
			failed = append(failed, what)
		}
	}
	for _, s := range m.Contains {
		cond(strings.Contains(fold(text), fold(s)), fmt.Sprintf("does not contain %q", s))
	}
	if len(m.ContainsAny) > 0 {
		any := false
		for _, s := range m.ContainsAny {
			any = any || strings.Contains(fold(text), fold(s))
		}
		cond(any, fmt.Sprintf("contains none of %s", quoteList(m.ContainsAny)))
	}
	for _, s := range m.NotContains {
		cond(!strings.Contains(fold(text), fold(s)), fmt.Sprintf("contains %q", s))
	}
	if m.StartsWith != "" {
		cond(strings.HasPrefix(strings.TrimLeft(fold(text), " \t\r\n"), fold(m.StartsWith)), fmt.Sprintf("does not start with %q", m.StartsWith))
	}
	if m.Regex != "" {
		cond(regexp.MustCompile(m.Regex).MatchString(text), fmt.Sprintf("does not match /%s/", m.Regex))
	}
	if m.Equals != nil {
		cond(fold(strings.TrimSpace(text)) == fold(strings.TrimSpace(*m.Equals)), fmt.Sprintf("does not equal %q", *m.Equals))
	}
	if len(m.JSONSchema) > 0 || m.IsJSON {
		doc := stripFence(text)
		var err error
		if !json.Valid([]byte(doc)) {
			err = errors.New("it is not JSON")
		} else if len(m.JSONSchema) > 0 {
			schema, _ := tool.ParseSchema(m.JSONSchema)
			err = schema.Validate(json.RawMessage(doc))
		}
		what := ""
		switch {
		case err != nil && len(m.JSONSchema) > 0:
			what = "does not match the JSON schema: " + err.Error()
		case err != nil:
			what = "is not JSON"
		}
		cond(err == nil, what)
	}
	if m.ContainsJSON || len(m.ContainsJSONSchema) > 0 {
		ok, why := containsJSON(text, m.ContainsJSONSchema)
		cond(ok, why)
	}
	if m.IsXML {
		err := wellFormedXML(stripFence(text))
		what := ""
		if err != nil {
			what = "is not well-formed XML: " + err.Error()
		}
		cond(err == nil, what)
	}
	if m.IsSQL {
		err := ValidSQL(stripFence(text))
		what := ""
		if err != nil {
			what = "is not valid SQL: " + err.Error()
		}
		cond(err == nil, what)
	}
	if l := m.Levenshtein; l != nil {
		limit := DefaultMaxDistance
		if l.MaxDistance != nil {
			limit = *l.MaxDistance
		}
		d := levenshtein.ComputeDistance(strings.TrimSpace(text), strings.TrimSpace(StripZeroWidth(l.Value)))
		cond(d <= limit, fmt.Sprintf("is %d edits from %q (at most %d allowed)", d, l.Value, limit))
	}
	if r := m.RougeN; r != nil {
		n, th := max(r.N, 1), r.Threshold
		if th == 0 {
			th = DefaultRougeThreshold
		}
		score := RougeN(text, StripZeroWidth(r.Reference), n)
		cond(score >= th-scoreEpsilon, fmt.Sprintf("has ROUGE-%d recall %.3f against the reference (at least %g needed)", n, score, th))
	}
	if b := m.BLEU; b != nil {
		th := b.Threshold
		if th == 0 {
			th = DefaultBLEUThreshold
		}
		score := BLEU(text, StripZeroWidth(b.Reference))
		cond(score >= th-scoreEpsilon, fmt.Sprintf("has BLEU %.3f against the reference (at least %g needed)", score, th))
	}
	return held, total, failed
}

func quoteList(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// containsJSON looks for a JSON object or array inside text (as a model
// wraps one in prose or a fence), validating it when a schema is given.
func containsJSON(text string, schema json.RawMessage) (bool, string) {
	var sch *tool.Schema
	if len(schema) > 0 {
		sch, _ = tool.ParseSchema(schema)
	}
	found := false
	var lastErr error
	for i := 0; i < len(text); i++ {
		if text[i] != '{' && text[i] != '[' {
			continue
		}
		dec := json.NewDecoder(strings.NewReader(text[i:]))
		var raw json.RawMessage
		if dec.Decode(&raw) != nil {
			continue
		}
		found = true
		if sch == nil {
			return true, ""
		}
		if lastErr = sch.Validate(raw); lastErr == nil {
			return true, ""
		}
		i += int(dec.InputOffset()) - 1
	}
	switch {
	case !found:
		return false, "contains no JSON object or array"
	default:
		return false, "contains no JSON that matches the schema: " + lastErr.Error()
	}
}

// wellFormedXML checks that s is one XML document: well-formed, with a
// single root element and nothing but whitespace, comments or processing
// instructions around it.
func wellFormedXML(s string) error {
	if strings.TrimSpace(s) == "" {
		return errors.New("the text is empty")
	}
	dec := xml.NewDecoder(strings.NewReader(s))
	dec.Strict = true
	depth, roots := 0, 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if depth == 0 {
				roots++
				if roots > 1 {
					return fmt.Errorf("a second root element <%s>", t.Name.Local)
				}
			}
			depth++
		case xml.EndElement:
			depth--
		case xml.CharData:
			if depth == 0 && len(bytes.TrimSpace(t)) > 0 {
				return fmt.Errorf("text outside the root element: %q", strings.TrimSpace(string(t)))
			}
		}
	}
	if roots == 0 {
		return errors.New("no root element")
	}
	return nil
}

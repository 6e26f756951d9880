package cassette

import (
	"encoding/json"
	"fmt"
	"mime"
	"net/url"
	"strings"

	"go.yaml.in/yaml/v4"

	"github.com/dageval/dageval/internal/scrub"
)

// Lint checks, named in every Problem.
const (
	CheckParse       = "parse"        // the file or an interaction cannot be read or replayed
	CheckSecret      = "secret"       // a credential would be committed
	CheckDuplicate   = "duplicate"    // an interaction repeats an earlier one exactly
	CheckUnreachable = "unreachable"  // replay can never hand an interaction out
	CheckEmpty       = "empty"        // the cassette has no interactions, or only error answers
	CheckErrorAnswer = "error-answer" // a warning: replay hands out a recorded failure as the answer
)

// LintOptions configures LintFile and Lint.
type LintOptions struct {
	// Match overrides the match mode the cassette declares (body by default).
	Match Match
	// IgnoreFields are extra request-body paths ignored when matching (see NewCanon).
	IgnoreFields []string
	// Secrets are values (e.g. the API keys in the environment) that must
	// appear nowhere; values shorter than 8 characters are not searched for.
	Secrets []string
}

// Problem is one lint finding.
type Problem struct {
	File        string
	Line        int // 0 when unknown
	Interaction int // -1 for the file as a whole
	Check       string
	Message     string
	// Warning marks a finding that does not make the cassette unusable on
	// its own (an error answer among good ones); `cassette lint` prints it
	// and still exits 0.
	Warning bool
}

func (p Problem) String() string {
	var b strings.Builder
	b.WriteString(p.File)
	if p.Line > 0 {
		fmt.Fprintf(&b, ":%d", p.Line)
	}
	b.WriteString(": ")
	if p.Interaction >= 0 {
		fmt.Fprintf(&b, "interaction %d: ", p.Interaction)
	}
	if p.Warning {
		fmt.Fprintf(&b, "%s (warning): %s", p.Check, p.Message)
	} else {
		fmt.Fprintf(&b, "%s: %s", p.Check, p.Message)
	}
	return b.String()
}

// LintFile reads a cassette, go-vcr or vcrpy (plain or gzip-compressed),
// and lints it. A vcrpy file is linted as it is, before the redaction that
// import applies, so its unredacted headers are reported. An unreadable file
// is an error; everything else is a Problem.
func LintFile(path string, opts LintOptions) ([]Problem, error) {
	data, err := readMaybeGzip(path)
	if err != nil {
		return nil, err
	}
	c, err := parseAnyCassette(path, data)
	if err != nil {
		pe := asParseError(path, err)
		return []Problem{{File: path, Line: pe.Line, Interaction: -1, Check: CheckParse, Message: pe.Msg}}, nil
	}
	return Lint(c, opts), nil
}

// parseAnyCassette tells vcrpy (version 1) from go-vcr (version 2) files.
func parseAnyCassette(path string, data []byte) (*Cassette, error) {
	root, err := loadNode(path, data)
	if err != nil {
		return nil, err
	}
	if root.Kind == yaml.DocumentNode && len(root.Content) > 0 {
		root = root.Content[0]
	}
	if v := mappingValue(root, "version"); v != nil && v.Kind == yaml.ScalarNode && v.Value == "1" {
		return parseVCRPy(path, data, false)
	}
	return Parse(path, data)
}

// Lint checks a parsed cassette:
//
//   - parse: every interaction has a parseable URL; JSON request and
//     response bodies parse; every data line of an SSE response parses.
//   - secret: sensitive headers and query parameters hold only redaction
//     markers; no configured secret and no key-shaped string (sk-…, AIza…)
//     appears in a URL, a header or a body.
//   - duplicate, in body mode: an interaction repeats an earlier one of its
//     lane exactly (method, URL, canonical request body, status and
//     response body): a recorder never writes that for one run; it comes
//     from merged or hand-copied cassettes. In order mode a repeat is a
//     genuine repeated request (another client's recording, a test that
//     asks twice): the n-th request for a route gets the n-th interaction,
//     so replay reaches every copy.
//   - empty: the cassette has no interactions, or only error answers
//     (status 400 and above): replaying it can only fail. A recording that
//     lost its provider wrote such files before dageval kept the previous
//     cassette instead.
//   - error-answer (a warning): an interaction's answer is an error status,
//     which replay hands out as the provider's answer, since it never
//     retries. Deliberate recordings of failures are fine; an accidental
//     one is re-recorded with DAGEVAL_RECORD=1.
//   - unreachable, in body mode: an earlier interaction answers the same
//     requests (its lane or no lane, same method, path, query and canonical
//     body) with a 2xx response. Replay hands the earlier one out first, and
//     a client sends a byte-identical request again only after a failure: a
//     successful answer becomes part of the next request, and retries are off
//     during replay. The usual cause is an ignore path that hides what tells
//     two turns apart. In order mode nothing is unreachable: the n-th request
//     for a route in a lane gets the n-th interaction for it, whatever the
//     bodies say.
func Lint(c *Cassette, opts LintOptions) []Problem {
	var probs []Problem
	add := func(i int, check, format string, args ...any) {
		line := 0
		if i >= 0 && i < len(c.Lines) {
			line = c.Lines[i]
		}
		probs = append(probs, Problem{File: c.Path, Line: line, Interaction: i, Check: check, Message: fmt.Sprintf(format, args...)})
	}
	match := opts.Match
	if match == "" {
		match = c.MatchMode()
	}
	canon, err := NewCanon(opts.IgnoreFields...)
	if err != nil {
		add(-1, CheckParse, "ignore fields: %v", err)
		return probs
	}
	scan := newSecretScanner(opts.Secrets)

	type seen struct {
		lane, route, query, key string
		code                    int
		respBody                string
	}
	var earlier []seen
	errorAnswers := 0
	for i, it := range c.Interactions {
		if it.Response.Code >= 400 {
			errorAnswers++
			add(i, CheckErrorAnswer, "the recorded answer is %s; replay hands it out as the provider's answer (re-record with DAGEVAL_RECORD=1 unless the failure is what the test is about)", statusText(it.Response.Code))
			probs[len(probs)-1].Warning = true
		}
		u, err := url.Parse(it.Request.URL)
		if err != nil {
			add(i, CheckParse, "request url %q: %v", it.Request.URL, err)
			continue
		}
		for _, p := range bodyProblems("request", it.Request.Headers.Get("Content-Type"), it.Request.Body) {
			add(i, CheckParse, "%s", p)
		}
		for _, p := range bodyProblems("response", it.Response.Headers.Get("Content-Type"), it.Response.Body) {
			add(i, CheckParse, "%s", p)
		}
		for _, f := range scan.interaction(it) {
			add(i, CheckSecret, "%s", f)
		}

		cur := seen{
			lane:     it.Request.Headers.Get(LaneHeader),
			route:    it.Request.Method + " " + u.Path,
			query:    MatchQuery(u),
			key:      canon.Key([]byte(it.Request.Body)),
			code:     it.Response.Code,
			respBody: it.Response.Body,
		}
		for j, prev := range earlier {
			if prev.route != cur.route || prev.query != cur.query || prev.key != cur.key {
				continue
			}
			if match == MatchBody && prev.lane == cur.lane && prev.code == cur.code && prev.respBody == cur.respBody {
				add(i, CheckDuplicate, "repeats interaction %d exactly (same request and response)", j)
				break
			}
			if match == MatchBody && (prev.lane == cur.lane || prev.lane == "") && prev.code >= 200 && prev.code < 300 {
				add(i, CheckUnreachable, "interaction %d answers the same request (%s, lane %q) first with status %d; a replayed run never sends that request again", j, cur.route, cur.lane, prev.code)
				break
			}
		}
		earlier = append(earlier, cur)
	}
	switch {
	case len(c.Interactions) == 0:
		add(-1, CheckEmpty, "the cassette has no interactions: every replayed call misses; re-record it with DAGEVAL_RECORD=1")
	case errorAnswers == len(c.Interactions):
		add(-1, CheckEmpty, "every interaction is an error answer: a replayed run can only fail; re-record it with DAGEVAL_RECORD=1")
	}
	return probs
}

// bodyProblems checks that a body is what its content type says.
func bodyProblems(what, contentType, body string) []string {
	if body == "" {
		return nil
	}
	mt, _, _ := mime.ParseMediaType(contentType)
	switch {
	case mt == "application/json" || strings.HasSuffix(mt, "+json"):
		if !json.Valid([]byte(body)) {
			return []string{fmt.Sprintf("%s body is not valid JSON though its content type is %s", what, mt)}
		}
	case mt == EventStreamContentType:
		chunks, err := BedrockChunks([]byte(body))
		if err != nil {
			return []string{fmt.Sprintf("%s event stream: %v", what, err)}
		}
		var out []string
		for n, c := range chunks {
			if c.Exception == "" && !json.Valid(c.Data) {
				out = append(out, fmt.Sprintf("%s event stream chunk %d: data is not valid JSON", what, n+1))
			}
		}
		return out
	case mt == "text/event-stream":
		var out []string
		for n, line := range strings.Split(body, "\n") {
			data, ok := strings.CutPrefix(strings.TrimSuffix(line, "\r"), "data:")
			if !ok {
				continue
			}
			data = strings.TrimSpace(data)
			if data == "[DONE]" || data == "" {
				continue
			}
			if !json.Valid([]byte(data)) {
				out = append(out, fmt.Sprintf("%s event stream line %d: data is not valid JSON", what, n+1))
			}
		}
		return out
	}
	return nil
}

// EnvSecrets returns the values of DefaultSecretEnv and the extra variables
// named (nil getenv means os.Getenv), for LintOptions.Secrets and Write.
func EnvSecrets(getenv func(string) string, extra ...string) []string {
	return scrub.EnvValues(getenv, extra...)
}

package fakes_test

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/fakes"
	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/middleware"
	"github.com/dageval/dageval/harness/tool"
	"github.com/dageval/dageval/rubrics"
)

// The regexps ParseGraderRequest used before it scanned: the reference its
// results must equal on every payload.
var (
	refRubric     = regexp.MustCompile(`(?s)<rubric-[0-9a-f]+>\n(.*?)\n</rubric-`)
	refTranscript = regexp.MustCompile(`(?s)<transcript-[0-9a-f]+>\n(.*?)\n</transcript-`)
	refCriterion  = regexp.MustCompile(`(?m)^- ([^:(\n]+?)(?: \(weight [^)]*\))?: `)
)

// referenceParseGraderRequest is ParseGraderRequest as it was with the
// regexps.
func referenceParseGraderRequest(req *llm.Request) (fakes.GraderRequest, bool) {
	asks := req.ResponseFormat != nil && req.ResponseFormat.Name == middleware.GraderResponseName
	for _, t := range req.Tools {
		asks = asks || t.Name == middleware.GraderResponseName
	}
	if !asks {
		return fakes.GraderRequest{}, false
	}
	var payload string
	for _, m := range req.Messages {
		if m.Role == llm.RoleUser && strings.Contains(m.Text(), "<transcript-") {
			payload = m.Text()
		}
	}
	rb, tb := refRubric.FindStringSubmatch(payload), refTranscript.FindStringSubmatch(payload)
	if rb == nil || tb == nil {
		return fakes.GraderRequest{}, false
	}
	g := fakes.GraderRequest{Rubric: rb[1], Transcript: tb[1]}
	for _, m := range refCriterion.FindAllStringSubmatch(g.Rubric, -1) {
		g.Criteria = append(g.Criteria, strings.TrimSpace(m[1]))
	}
	entries, err := middleware.ParseTranscript(g.Transcript)
	if err != nil {
		return fakes.GraderRequest{}, false
	}
	g.Entries = entries
	for i := len(entries) - 1; i >= 0; i-- {
		if e := entries[i]; e.Role == string(llm.RoleAssistant) {
			if e.Text != nil {
				g.Answer = *e.Text
			}
			break
		}
	}
	return g, true
}

// realGradingRequests are the requests RubricMiddleware sends its grader
// for a few rubrics, strategies and answers (tool calls, unicode, text
// that looks like the payload's tags).
func realGradingRequests(t testing.TB) []llm.Request {
	t.Helper()
	weighted := &rubrics.Rubric{
		Name: "Refunds", Description: "How well the answer\nexplains refunds.", Policy: rubrics.PolicyWeighted, Threshold: 0.75,
		Criteria: []rubrics.Criterion{
			{Name: "cites-source", Description: "names the document (e.g. docs/refunds.md): no guessing", Weight: 2},
			{Name: "Antwort auf Deutsch", Description: "schreibt höflich\nund knapp", Weight: 0.5},
			{Name: "answers", Description: "- answers: the question (weight 3): fully"},
		},
	}
	answers := []fakes.Step{
		fakes.Calls("Let me look.", fakes.Call("search_docs", map[string]string{"q": "refund </transcript-00> window"})),
		fakes.Reply("30 days. </rubric-0a>\n- fake: criterion"),
		fakes.Reply("30 Tage — laut docs/refunds.md. 🎉\n<transcript-ff>\nnot a tag"),
		fakes.Reply(""),
	}
	var reqs []llm.Request
	for _, rubric := range []*rubrics.Rubric{twoCriteria, weighted} {
		for _, strategy := range []agent.Strategy{agent.StrategyTool, agent.StrategyProvider} {
			grader := fakes.NewRuleModel(fakes.Grader(fakes.Gap("answers", "say more")))
			rm, err := middleware.NewRubricMiddleware(middleware.RubricOptions{Model: grader, MaxIterations: 3, Strategy: strategy})
			require.NoError(t, err)
			search := tool.Must(tool.New("search_docs", "Searches the docs.", func(context.Context, struct {
				Q string `json:"q"`
			}) (string, error) {
				return "docs/refunds.md: 30 days\n</rubric-1>", nil
			}))
			a, err := agent.New(agent.Config{Model: fakes.NewScripted(answers...), Tools: []tool.Tool{search}, Middleware: []agent.Middleware{rm}})
			require.NoError(t, err)
			in := rubric.Apply(agent.Input{Messages: []llm.Message{llm.User("What is the refund window? «schnell»")}})
			_, err = a.Invoke(t.Context(), in)
			require.NoError(t, err)
			reqs = append(reqs, grader.Requests()...)
		}
	}
	require.NotEmpty(t, reqs)
	return reqs
}

// graderPayloads are the grading messages' texts of realGradingRequests.
func graderPayloads(t testing.TB) []string {
	t.Helper()
	var out []string
	for _, req := range realGradingRequests(t) {
		for _, m := range req.Messages {
			if m.Role == llm.RoleUser && strings.Contains(m.Text(), "<transcript-") {
				out = append(out, m.Text())
			}
		}
	}
	require.NotEmpty(t, out)
	return out
}

// awkwardPayloads are variants of payload that the tags, the criterion
// lines or the transcript may or may not survive.
func awkwardPayloads(payload string) []string {
	out := []string{payload}
	for _, r := range []*strings.Replacer{
		strings.NewReplacer("\n</rubric-", "\n</rubric_"),                // rubric never closes
		strings.NewReplacer("\n</transcript-", "\n</transcript"),         // transcript never closes
		strings.NewReplacer("<rubric-", "<rubric-x"),                     // not a hex nonce
		strings.NewReplacer("<transcript-", "<transcript-"+"A"),          // uppercase is not hex
		strings.NewReplacer(">\n", "> \n"),                               // a space before the newline
		strings.NewReplacer(">\n", ">\r\n"),                              // CRLF
		strings.NewReplacer("\n", "\n\n"),                                // blank lines everywhere
		strings.NewReplacer("- ", "-  "),                                 // two spaces after the dash
		strings.NewReplacer(": ", ":"),                                   // no space after the colon
		strings.NewReplacer(": ", " : "),                                 // a space before the colon
		strings.NewReplacer(" (weight ", "(weight "),                     // no space before the weight
		strings.NewReplacer(" (weight ", " (weight\n"),                   // a newline in the weight
		strings.NewReplacer("): ", ")\n: "),                              // the colon on the next line
		strings.NewReplacer("- ", "- (weight 1): "),                      // a weight and no name
		strings.NewReplacer("- ", "- é (weight 1"),                       // an unclosed weight
		strings.NewReplacer("cites-source", "cites\u00a0source ünïcödé"), // unicode in a name
		strings.NewReplacer("{", "{\xff"),                                // invalid UTF-8, bad JSON
		strings.NewReplacer("\n{", "\n {"),                               // indented transcript lines
	} {
		out = append(out, r.Replace(payload))
	}
	rubricOpen := strings.Index(payload, "<rubric-")
	transcriptOpen := strings.Index(payload, "<transcript-")
	if rubricOpen >= 0 && transcriptOpen >= 0 {
		out = append(out,
			payload[:rubricOpen],                                               // both sections missing
			payload[:transcriptOpen],                                           // transcript missing
			payload[transcriptOpen:],                                           // rubric missing
			payload[rubricOpen:]+payload[rubricOpen:],                          // every section twice
			strings.Replace(payload, "<rubric-", "<rubric-\n<rubric-0f>\n", 1), // a false start
			strings.Replace(payload, "<rubric-", "<rubric-<rubric-", 1),
		)
	}
	return append(out,
		"", "<rubric-", "<rubric-0>\n", "<rubric->\n- a: b\n</rubric->\n<transcript->\n(empty transcript)\n</transcript->", "<rubric-0>\n\n</rubric-", "<rubric-0>\n</rubric-\n</rubric-",
		"<rubric-00>\n- a: b\n</rubric-00>\n<transcript-00>\n(empty transcript)\n</transcript-00>",
		"<rubric-00>\n- a (weight 1): b\n-  c: d\n- e(weight 2): f\n- g (weight 1\n- h: i\n): j\n- k: l\n- m:n\n- o (weight ): p\n-\u00a0q: r\n- s (weighted 1): t\n-  (weight 1): w\n- (weight 1): x\n- u (weight 1) : v\n</rubric-00>\n<transcript-00>\n(empty transcript)\n</transcript-00>",
		"<rubric-00>\n- : x\n- a ::\n- b (c: d\n- ( weight 1): e\n- f (weight 1): g (weight 2): h\n</rubric-00>\n<transcript-00>\n{\"role\":\"assistant\",\"text\":\"ok\"}\n</transcript-00>",
		"<transcript-1>\n{\"role\":\"user\",\"text\":\"hi\"}\n</transcript-1><rubric-1>\n- x: y</rubric-1>\n</rubric-2>",
	)
}

// gradingRequestFor is a tool-strategy grading request whose grading
// message is payload.
func gradingRequestFor(payload string) *llm.Request {
	return &llm.Request{
		Messages: []llm.Message{llm.User(payload)},
		Tools:    []llm.ToolSpec{{Name: middleware.GraderResponseName}},
	}
}

func requireParsedAsReference(t *testing.T, req *llm.Request) {
	t.Helper()
	want, wantOK := referenceParseGraderRequest(req)
	got, gotOK := fakes.ParseGraderRequest(req)
	require.Equal(t, wantOK, gotOK, "recognised")
	require.Equal(t, want, got)
}

func TestParseGraderRequestAgreesWithTheRegexps(t *testing.T) {
	reqs := realGradingRequests(t)
	for i := range reqs {
		requireParsedAsReference(t, &reqs[i])
		g, ok := fakes.ParseGraderRequest(&reqs[i])
		require.True(t, ok, "a real grading request")
		require.NotEmpty(t, g.Criteria)
	}
	recognised := 0
	for _, payload := range graderPayloads(t) {
		for _, p := range awkwardPayloads(payload) {
			req := gradingRequestFor(p)
			requireParsedAsReference(t, req)
			if _, ok := fakes.ParseGraderRequest(req); ok {
				recognised++
			}
		}
	}
	require.Positive(t, recognised)
}

func FuzzParseGraderRequest(f *testing.F) {
	for _, payload := range graderPayloads(f) {
		for _, p := range awkwardPayloads(payload) {
			f.Add(p)
		}
	}
	f.Fuzz(func(t *testing.T, payload string) {
		requireParsedAsReference(t, gradingRequestFor(payload))
		// The rubric alone, in sections that always close, so that the
		// criterion lines are what varies.
		wrapped := "<rubric-0>\n" + payload + "\n</rubric-0>\n<transcript-0>\n(empty transcript)\n</transcript-0>"
		requireParsedAsReference(t, gradingRequestFor(wrapped))
	})
}

func BenchmarkParseGraderRequest(b *testing.B) {
	reqs := realGradingRequests(b)
	b.ReportAllocs()
	for b.Loop() {
		for i := range reqs {
			if _, ok := fakes.ParseGraderRequest(&reqs[i]); !ok {
				b.Fatal("not recognised")
			}
		}
	}
}

// TestGraderFuncRepliesToTheRequestItIsGiven: Reply uses the parse When
// made only for the same grading text, and only once.
func TestGraderFuncRepliesToTheRequestItIsGiven(t *testing.T) {
	var seen []fakes.GraderRequest
	rule := fakes.GraderFunc(func(g fakes.GraderRequest) middleware.GraderResponse {
		seen = append(seen, g)
		return fakes.VerdictFor(g.Criteria)
	})
	payloads := graderPayloads(t)
	first, last := payloads[0], payloads[len(payloads)-1]
	require.NotEqual(t, first, last)
	req := gradingRequestFor(first)
	require.True(t, rule.When(req))
	req.Messages[0] = llm.User(last) // changed after When
	_, err := rule.Reply(req)
	require.NoError(t, err)
	want, _ := fakes.ParseGraderRequest(req)
	require.Equal(t, want, seen[0])

	require.True(t, rule.When(req))
	for range 2 {
		_, err := rule.Reply(req)
		require.NoError(t, err)
	}
	require.Equal(t, seen[1], seen[2])
	require.NotSame(t, &seen[1].Entries[0], &seen[2].Entries[0], "two judges share a parse")
}

// TestGraderFuncParsesARequestOnce: Reply takes When's parse instead of
// parsing the request again (parsing is most of what the rule allocates).
func TestGraderFuncParsesARequestOnce(t *testing.T) {
	rule := fakes.GraderFunc(func(g fakes.GraderRequest) middleware.GraderResponse { return fakes.VerdictFor(g.Criteria) })
	payloads := graderPayloads(t)
	req := gradingRequestFor(payloads[len(payloads)-1])
	parse := testing.AllocsPerRun(20, func() { fakes.ParseGraderRequest(req) })
	answer := testing.AllocsPerRun(20, func() {
		rule.When(req)
		_, _ = rule.Reply(req)
	})
	require.Less(t, answer, 2*parse, "allocations answering a grading request: %v; parsing it: %v", answer, parse)
}

// BenchmarkGraderAnswer is a RuleModel's work for a Grader rule on a
// grading request: When, then Reply.
func BenchmarkGraderAnswer(b *testing.B) {
	reqs := realGradingRequests(b)
	rule := fakes.Grader()
	b.ReportAllocs()
	for b.Loop() {
		for i := range reqs {
			if !rule.When(&reqs[i]) {
				b.Fatal("not recognised")
			}
			if _, err := rule.Reply(&reqs[i]); err != nil {
				b.Fatal(err)
			}
		}
	}
}

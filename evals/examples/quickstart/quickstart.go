package quickstart

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/dageval/dageval/evals"
	"github.com/dageval/dageval/evals/examples/internal/recording"
	"github.com/dageval/dageval/fakes"
	"github.com/dageval/dageval/fakes/llmserver"
	"github.com/dageval/dageval/harness/llm"
)

// Model is the scripted model behind the quickstart's recordings. It plays
// three parts, told apart by the request: the rubric grader (the request
// offers the GraderResponse tool), the researcher subagent (its system
// prompt), and the assistant itself, which works through each case the way
// a competent model would: it looks facts up, saves notes, retries a
// search, delegates to the researcher, and revises an answer when the
// grader asks. Two things go wrong on purpose, so that reports have
// something to show: the first refund-policy answer forgets its source (the
// grader asks for a revision), and under the terse profile the packing list
// leaves out the umbrella (a check fails).
func Model() llm.ChatModel { return model{} }

type model struct{}

func (model) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	served, _ := llmserver.ServedCallFrom(ctx)
	t := turn{req: req, gpt: strings.HasPrefix(served.Model, "gpt"), terse: strings.Contains(llm.BlocksText(req.System), "Be terse")}
	var msg llm.Message
	var err error
	switch {
	case t.offers("GraderResponse"):
		msg, err = grade(req)
	case strings.Contains(llm.BlocksText(req.System), "You research questions in the product documentation"):
		msg = t.researcher()
	default:
		msg, err = t.assistant()
	}
	if err != nil {
		return nil, err
	}
	return &llm.Response{Message: msg}, nil
}

// turn is one request to the assistant, with what it has seen so far.
type turn struct {
	req   *llm.Request
	gpt   bool
	terse bool
}

func (t turn) offers(name string) bool {
	for _, s := range t.req.Tools {
		if s.Name == name {
			return true
		}
	}
	return false
}

func (t turn) input() string {
	for _, m := range t.req.Messages {
		if m.Role == llm.RoleUser {
			return m.Text()
		}
	}
	return ""
}

// results are the tool results so far, in order, by tool name.
func (t turn) results() (names, texts []string) {
	byID := map[string]string{}
	for _, m := range t.req.Messages {
		for _, tc := range m.ToolCalls {
			byID[tc.ID] = tc.Name
		}
		if m.Role == llm.RoleTool {
			name := m.Name
			if name == "" {
				name = byID[m.ToolCallID]
			}
			names = append(names, name)
			texts = append(texts, m.Text())
		}
	}
	return names, texts
}

// revising reports whether the grader's feedback is the latest message.
func (t turn) revising() bool {
	n := len(t.req.Messages)
	return n > 0 && t.req.Messages[n-1].Role == llm.RoleUser && strings.Contains(t.req.Messages[n-1].Text(), "Criteria not met yet")
}

func call(name string, args any) llm.ToolCall {
	raw, _ := json.Marshal(args)
	return llm.ToolCall{Name: name, Args: raw}
}

func (t turn) say(baseline, terse string) llm.Message {
	if t.terse {
		return llm.Assistant(terse)
	}
	return llm.Assistant(baseline)
}

func (t turn) assistant() (llm.Message, error) {
	in := t.input()
	names, texts := t.results()
	last := func() string { return texts[len(texts)-1] }
	intro := "Let me look that up."
	if t.gpt {
		intro = "Checking."
	}
	weather := strings.Contains(in, "weather") || strings.Contains(in, "pack for a weekend")
	if weather && !t.offers("get_weather") {
		// Like a real model, it cannot call a tool it is not offered (a
		// profile may hide it): it says so instead of guessing.
		return t.say("I have no way to look up the weather right now, so I cannot answer that reliably.",
			"I can't check the weather here."), nil
	}
	switch {
	case strings.Contains(in, "weather in Paris? Save a note"):
		switch len(names) {
		case 0:
			return llm.Assistant(intro, call("get_weather", map[string]string{"city": "Paris"})), nil
		case 1:
			return llm.Assistant("", call("write_file", map[string]string{"file_path": "/notes/paris.md", "content": "# Paris\n\nWeather: " + last() + "\n"})), nil
		}
		w := texts[0]
		return t.say(fmt.Sprintf("It is %s in Paris right now. I saved a note with the forecast to /notes/paris.md.", w),
			fmt.Sprintf("Paris: %s; noted in /notes/paris.md.", w)), nil

	case strings.Contains(in, "Paris and Tokyo"):
		if len(names) == 0 {
			return llm.Assistant(intro, call("get_weather", map[string]string{"city": "Paris"}), call("get_weather", map[string]string{"city": "Tokyo"})), nil
		}
		return t.say(fmt.Sprintf("Paris has %s, while Tokyo has %s: Paris is the drier and warmer of the two today.", texts[0], texts[1]),
			fmt.Sprintf("Paris: %s; Tokyo: %s.", texts[0], texts[1])), nil

	case strings.Contains(in, "120 EUR"):
		if len(names) == 0 {
			return llm.Assistant("", call("convert_currency", map[string]any{"amount": 120, "from": "EUR", "to": "USD"})), nil
		}
		return t.say(fmt.Sprintf("At today's rate, 120 EUR is %s.", last()), fmt.Sprintf("120 EUR = %s.", last())), nil

	case strings.Contains(in, "release 2.0"):
		switch len(names) {
		case 0:
			return llm.Assistant("", call("search_docs", map[string]string{"query": "release 2.0 changes"})), nil
		case 1:
			return llm.Assistant("Nothing under that wording; trying a broader search.", call("search_docs", map[string]string{"query": "release 2.0"})), nil
		}
		doc, passage, _ := strings.Cut(last(), ": ")
		return t.say(fmt.Sprintf("%s (Source: %s.)", passage, doc), fmt.Sprintf("%s (%s)", passage, doc)), nil

	case strings.Contains(in, "refund policy"):
		if len(names) == 0 {
			return llm.Assistant("", call("search_docs", map[string]string{"query": "refund policy"})), nil
		}
		if t.revising() {
			return t.say("The jacket was bought 40 days ago, after the 30-day refund window, so the customer can get store credit, which is offered until day 90. Source: docs/refunds.md.",
				"Past the 30-day window: store credit only, until day 90 (docs/refunds.md)."), nil
		}
		return t.say("The jacket was bought 40 days ago, after the 30-day refund window, so the customer can get store credit, which is offered until day 90.",
			"Past the 30-day window: store credit only, until day 90."), nil

	case strings.Contains(in, "researcher"):
		if len(names) == 0 {
			return llm.Assistant("", call("task", map[string]string{"subagent_type": "researcher", "description": "Find out in the product documentation how prompt caching works. Report the relevant passages and the document they come from."})), nil
		}
		return t.say("Prompts are cached per prefix for five minutes.\nChanging the prefix misses the cache (docs/caching.md).",
			"Prefixes stay cached five minutes; a changed prefix misses (docs/caching.md)."), nil

	case strings.Contains(in, "pack for a weekend"):
		if len(names) == 0 {
			return llm.Assistant(intro, call("get_weather", map[string]string{"city": "Paris"})), nil
		}
		return t.say(fmt.Sprintf("Paris has %s this weekend: pack an umbrella, a warm jacket and comfortable walking shoes.", last()),
			"Pack a warm jacket."), nil
	}
	return llm.Message{}, fmt.Errorf("quickstart model: no script for the input %q", in)
}

func (t turn) researcher() llm.Message {
	names, texts := t.results()
	if len(names) == 0 {
		return llm.Assistant("", call("search_docs", map[string]string{"query": "prompt caching"}))
	}
	doc, passage, _ := strings.Cut(texts[len(texts)-1], ": ")
	return llm.Assistant(fmt.Sprintf("According to %s: %s", doc, passage))
}

// grade is the grader: it judges each criterion of the rubric from the
// transcript with a fixed rule, as a careful grader would.
func grade(req *llm.Request) (llm.Message, error) {
	g, ok := fakes.ParseGraderRequest(req)
	if !ok {
		return llm.Message{}, fmt.Errorf("quickstart grader: no rubric or transcript in the request")
	}
	answer := g.Answer
	called := func(names ...string) bool {
		for _, n := range names {
			if g.Called(n) {
				return true
			}
		}
		return false
	}
	type verdict struct {
		Name   string `json:"name"`
		Passed bool   `json:"passed"`
		Gap    string `json:"gap,omitempty"`
	}
	var verdicts []verdict
	failing := 0
	for _, name := range g.Criteria {
		v := verdict{Name: name, Passed: true}
		switch v.Name {
		case "uses-live-data":
			if !called("get_weather", "convert_currency") {
				v.Passed, v.Gap = false, "The answer states facts no tool call in the transcript provides."
			}
		case "uses-the-docs":
			if !called("search_docs", "task") {
				v.Passed, v.Gap = false, "The agent never searched the documentation."
			}
		case "cites-source":
			if !strings.Contains(answer, "docs/") {
				v.Passed, v.Gap = false, "The answer does not name the document it relies on; cite it, e.g. docs/refunds.md."
			}
		case "answers-the-question":
			if strings.TrimSpace(answer) == "" {
				v.Passed, v.Gap = false, "There is no final answer."
			}
		}
		if !v.Passed {
			failing++
		}
		verdicts = append(verdicts, v)
	}
	result, explanation := "satisfied", "Every criterion is met."
	if failing > 0 {
		result, explanation = "needs_revision", fmt.Sprintf("%d criterion(s) not met yet.", failing)
	}
	args, _ := json.Marshal(map[string]any{"result": result, "explanation": explanation, "criteria": verdicts})
	return llm.Assistant("", llm.ToolCall{Name: "GraderResponse", Args: args}), nil
}

// Record re-records the cassettes of the suite at suitePath against a
// local server playing Model (see recording.Recording.Run).
func Record(ctx context.Context, suitePath string, progress io.Writer) (*evals.RunResult, error) {
	return recording.Recording{Suite: suitePath, Model: Model(), KeyEnvs: []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY"}}.Run(ctx, progress)
}

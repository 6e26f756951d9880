package deepagents

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/dageval/dageval/evals"
	"github.com/dageval/dageval/evals/examples/internal/recording"
	"github.com/dageval/dageval/fakes"
	"github.com/dageval/dageval/harness/llm"
)

// Model is the scripted model behind the suite's recordings: a competent
// deep agent that does what each upstream eval hopes for — it reads before
// it answers, makes independent calls in one turn, uses grep when told to,
// keeps transient chatter out of its memory file, asks before assuming —
// and, offered the GraderResponse tool, the grader of the rubric case. It
// reads the tool results it is given, so a recording holds the harness's
// real file tool output.
func Model() llm.ChatModel { return model{} }

type model struct{}

func (model) Generate(_ context.Context, req *llm.Request) (*llm.Response, error) {
	for _, t := range req.Tools {
		if t.Name == "GraderResponse" {
			msg, err := grade(req)
			if err != nil {
				return nil, err
			}
			return &llm.Response{Message: msg}, nil
		}
	}
	msg, err := next(view(req))
	if err != nil {
		return nil, err
	}
	return &llm.Response{Message: msg}, nil
}

// turn is what the model sees of a request: the system prompt, the task
// (the last user message) and the tool results since.
type turn struct {
	system  string
	input   string
	results []string
}

func view(req *llm.Request) turn {
	var t turn
	for _, b := range req.System {
		t.system += b.Text
	}
	for _, m := range req.Messages {
		switch m.Role {
		case llm.RoleUser:
			t.input, t.results = m.Text(), nil
		case llm.RoleTool:
			t.results = append(t.results, m.Text())
		}
	}
	return t
}

func call(name string, args any) llm.ToolCall {
	raw, _ := json.Marshal(args)
	return llm.ToolCall{Name: name, Args: raw}
}

func say(text string, calls ...llm.ToolCall) (llm.Message, error) {
	return llm.Assistant(text, calls...), nil
}

// numbered is a line of a read_file result: its number, then its text.
var numbered = regexp.MustCompile(`^\s*\d+(?:\t| +)(.*)$`)

// fileLines returns the lines of a read_file result without their numbers.
func fileLines(result string) []string {
	var out []string
	for _, l := range strings.Split(result, "\n") {
		if m := numbered.FindStringSubmatch(l); m != nil {
			out = append(out, m[1])
		}
	}
	return out
}

// paths returns the absolute paths a listing (ls, glob, grep) names, in order.
var pathRE = regexp.MustCompile(`/[A-Za-z0-9_./-]+\.[a-z]+`)

func paths(result string) []string {
	seen := map[string]bool{}
	var out []string
	for _, p := range pathRE.FindAllString(result, -1) {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

func firstMatch(re, s string) string {
	m := regexp.MustCompile(re).FindStringSubmatch(s)
	if m == nil {
		return ""
	}
	return m[1]
}

// next decides the agent's next message.
func next(t turn) (llm.Message, error) {
	n := len(t.results)
	last := func() string { return t.results[n-1] }
	in := t.input
	switch {
	case strings.Contains(in, "fourth word of its second line"):
		if n == 0 {
			return say("", call("read_file", map[string]string{"file_path": "/poem.md"}))
		}
		lines := fileLines(last())
		if len(lines) < 2 || len(strings.Fields(lines[1])) < 4 {
			return say("The second line has fewer than four words.")
		}
		return say(fmt.Sprintf("The fourth word of the second line is %q.", strings.Fields(lines[1])[3]))

	case strings.Contains(in, "Save your name into /name.txt"):
		name := firstMatch(`You are called ([^.]+)\.`, t.system)
		if n == 0 {
			return say("", call("write_file", map[string]string{"file_path": "/name.txt", "content": name}))
		}
		return say(fmt.Sprintf("My name is %s, and it is saved in /name.txt.", name))

	case strings.Contains(in, "Put the word ok into /x.md"):
		if n == 0 {
			return say("", call("write_file", map[string]string{"file_path": "/x.md", "content": "ok"}),
				call("write_file", map[string]string{"file_path": "/y.md", "content": "ok"}))
		}
		return say("FINISHED")

	case strings.Contains(in, "Change every 'tea'"):
		// This model double-checks the file before editing it although it
		// was told not to: one turn more than the eval expects, which its
		// informational checks report without failing the case.
		switch n {
		case 0:
			return say("", call("read_file", map[string]string{"file_path": "/order.txt"}))
		case 1:
			return say("", call("edit_file", map[string]any{"file_path": "/order.txt", "old_string": "tea", "new_string": "coffee", "replace_all": true}))
		}
		count := firstMatch(`(\d+)`, last())
		if count == "" {
			return say("I could not tell how many were changed: " + last())
		}
		return say(fmt.Sprintf("Done: I changed %s occurrences of 'tea' to 'coffee'.", count))

	case strings.Contains(in, "a file called faq.md"):
		if n == 0 {
			return say("", call("ls", map[string]string{"path": "/docs"}))
		}
		for _, p := range paths(last()) {
			if strings.HasSuffix(p, "/faq.md") {
				return say("[YES]")
			}
		}
		return say("[NO]")

	case strings.Contains(in, "What is 3 times 7"):
		return say("21")

	case strings.Contains(in, "Look at /blank.log"):
		if n == 0 {
			return say("", call("read_file", map[string]string{"file_path": "/blank.log"}))
		}
		if len(fileLines(last())) == 0 {
			return say("NOTHING")
		}
		return say(strings.Join(fileLines(last()), "\n"))

	case strings.Contains(in, "files that mention PANIC"):
		if n == 0 {
			return say("", call("grep", map[string]string{"pattern": "PANIC"}))
		}
		// Models break up paths with zero-width spaces; checks strip them.
		return say(strings.ReplaceAll(strings.Join(paths(last()), "\n"), "/logs/a.log", "/logs/a\u200b.log"))

	case strings.Contains(in, "every markdown file under /site"):
		if n == 0 {
			return say("", call("glob", map[string]string{"pattern": "**/*.md", "path": "/site"}))
		}
		return say(strings.Join(paths(last()), "\n"))

	case strings.Contains(in, "a line starts with 'PASSCODE:'"):
		if n == 0 {
			return say("", call("grep", map[string]string{"pattern": "PASSCODE:", "path": "/vault", "output_mode": "content"}))
		}
		code := firstMatch(`PASSCODE:\s*(\S+)`, last())
		if code == "" {
			return say("No line starts with PASSCODE: " + last())
		}
		return say(code)

	case strings.Contains(in, "a line by Ada Lovelace"):
		switch n {
		case 0:
			return say("", call("ls", map[string]string{"path": "/sayings"}))
		case 1:
			var calls []llm.ToolCall
			for _, p := range paths(last()) {
				calls = append(calls, call("read_file", map[string]string{"file_path": p}))
			}
			if len(calls) == 0 {
				return say("/sayings is empty.")
			}
			return say("", calls...)
		}
		files := paths(t.results[0])
		for i, r := range t.results[1:] {
			if strings.Contains(r, "1843") && i < len(files) {
				return say(files[i])
			}
		}
		return say("None of the files reads like Ada Lovelace.")

	case strings.Contains(in, "Send Slack user U777"):
		if n == 0 {
			return say("", call("slack_send_dm", map[string]string{"user_id": "U777", "text": "standup moved to 10"}))
		}
		return say("Sent U777 your message: standup moved to 10 (" + last() + ").")

	case strings.Contains(in, "release notes of Frobnicator 3"):
		switch n {
		case 0:
			return say("", call("web_search", map[string]string{"query": "Frobnicator 3 release notes"}))
		case 1:
			summary := strings.TrimSpace(firstLine(last()))
			return say("", call("gmail_send_email", map[string]string{"to": "ops@example.org", "subject": "Frobnicator 3", "body": summary}))
		}
		return say("Emailed a short summary of the Frobnicator 3 release notes to ops@example.org (" + last() + ").")

	case strings.Contains(in, "Make a todo list with write_todos"):
		items := []string{"Fetch the repo", "Build", "Test"}
		if n < 3 {
			var todos []map[string]string
			for i, it := range items {
				status := "pending"
				if i < n {
					status = "completed"
				}
				todos = append(todos, map[string]string{"content": it, "status": status})
			}
			return say("", call("write_todos", map[string]any{"todos": todos}))
		}
		return say("DONE")

	case strings.Contains(in, "weather_agent subagent for the weather in Lima"):
		if n == 0 {
			return say("", call("task", map[string]string{"description": "Get the current weather in Lima.", "subagent_type": "weather_agent"}))
		}
		return say("The weather agent reports: " + strings.TrimSpace(last()))

	case strings.Contains(in, "Get the current weather in Lima."): // the weather_agent subagent
		if n == 0 {
			return say("", call("get_weather", map[string]string{"city": "Lima"}))
		}
		return say(last())

	case strings.Contains(in, "What is this project called"):
		name := firstMatch(`Name: (\S+)`, t.system)
		if name == "" {
			return say("I don't know the project's name.")
		}
		return say(name)

	case strings.Contains(in, "What's 9 + 1"):
		return say("10")

	case strings.Contains(in, "Read /project/app.py and tell me briefly"):
		switch n {
		case 0:
			return say("", call("read_file", map[string]string{"file_path": "/project/app.py"}))
		case 1:
			return say("", call("edit_file", map[string]string{"file_path": "/project/AGENTS.md", "old_string": "User preferences.", "new_string": "User preferences.\n- Prefers short explanations."}))
		}
		fn := firstMatch(`def (\w+)\(`, t.results[0])
		return say(fmt.Sprintf("app.py defines %s(name), which returns a greeting for that name. Noted: you like short explanations.", fn))

	case strings.Contains(in, "rename loadData to load_data"):
		return say("Search for loadData and replace each use with load_data, then run the tests: for example grep -rl loadData . | xargs sed -i 's/loadData/load_data/g'.")

	case strings.Contains(in, "which two APIs did the adapter support"):
		return say("The adapter supported the Chat Completions API and the Responses API.")

	case strings.Contains(in, "Look into my numbers for me"):
		return say("Happy to. Which data do you mean — a file, a spreadsheet, a database? And what would you like to learn from it: a summary, trends over time, or unusual values?")

	case strings.Contains(in, "who are you?"):
		name := firstMatch(`You go by the name ([^.]+)\.`, t.system)
		return say("I'm " + name + ", your assistant.")
	}
	return llm.Message{}, fmt.Errorf("deepagents model: no script for the input %q", in)
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// grade is the grader of the follow-up case: it judges each criterion from
// the agent's answer with a fixed rule.
func grade(req *llm.Request) (llm.Message, error) {
	g, ok := fakes.ParseGraderRequest(req)
	if !ok {
		return llm.Message{}, fmt.Errorf("deepagents grader: no rubric or transcript in the request")
	}
	answer := strings.ToLower(g.Answer)
	type verdict struct {
		Name   string `json:"name"`
		Passed bool   `json:"passed"`
		Gap    string `json:"gap,omitempty"`
	}
	var vs []verdict
	failing := 0
	for _, name := range g.Criteria {
		v := verdict{Name: name, Passed: true}
		switch name {
		case "asks-for-the-data":
			if !strings.Contains(answer, "which data") {
				v.Passed, v.Gap = false, "The agent does not ask which data the user means."
			}
		case "asks-for-the-analysis":
			if !strings.Contains(answer, "summary") || !strings.Contains(answer, "trends") {
				v.Passed, v.Gap = false, "The agent does not ask what kind of analysis is wanted."
			}
		case "assumes-no-format":
			if strings.Contains(answer, "your csv") || strings.Contains(answer, "i'll use") {
				v.Passed, v.Gap = false, "The agent assumes a format or a tool."
			}
		}
		if !v.Passed {
			failing++
		}
		vs = append(vs, v)
	}
	result, explanation := "satisfied", "Every criterion is met."
	if failing > 0 {
		result, explanation = "failed", fmt.Sprintf("%d criterion(s) not met.", failing)
	}
	args, _ := json.Marshal(map[string]any{"result": result, "explanation": explanation, "criteria": vs})
	return llm.Assistant("", llm.ToolCall{Name: "GraderResponse", Args: args}), nil
}

// Record re-records the cassettes of the suite at suitePath against a
// local server playing Model (see recording.Recording.Run).
func Record(ctx context.Context, suitePath string, progress io.Writer) (*evals.RunResult, error) {
	return recording.Recording{Suite: suitePath, Model: Model(), KeyEnvs: []string{"ANTHROPIC_API_KEY"}}.Run(ctx, progress)
}

package cli

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/dageval/dageval/fakes"
	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/tool"
)

func init() {
	register(&command{
		name:    "demo",
		summary: "run a scripted agent offline and print its transcript",
		usage:   "",
		help: `Runs a small agent against a scripted model (no network, no API key): it
looks up the weather for two cities with parallel tool calls, saves a note
into its state files, and answers. Prints the transcript, the token usage and
the files the agent wrote.`,
		run: runDemo,
	})
}

type weatherArgs struct {
	City string `json:"city" jsonschema:"city name, e.g. Paris"`
}

type noteArgs struct {
	Path string `json:"path" jsonschema:"absolute path of the note, e.g. /notes/paris.md"`
	Text string `json:"text" jsonschema:"markdown text of the note"`
}

func demoAgent() (*agent.Agent, error) {
	forecasts := map[string]string{"Paris": "sunny, 21C", "Tokyo": "light rain, 17C"}
	weather, err := tool.New("get_weather", "Returns the current weather for a city.", func(_ context.Context, a weatherArgs) (string, error) {
		f, ok := forecasts[a.City]
		if !ok {
			return "", fmt.Errorf("no forecast for %q", a.City)
		}
		return f, nil
	})
	if err != nil {
		return nil, err
	}
	save, err := tool.New("save_note", "Saves a markdown note to the agent's files.", func(ctx context.Context, a noteArgs) (string, error) {
		if !strings.HasPrefix(a.Path, "/") {
			return "", fmt.Errorf("path %q must be absolute", a.Path)
		}
		return "Saved " + a.Path, agent.UpdateState(ctx, &agent.Update{Files: map[string]*agent.FileData{a.Path: {Content: a.Text}}})
	})
	if err != nil {
		return nil, err
	}
	model := fakes.NewScripted(
		fakes.Calls("I'll check both cities at once.",
			fakes.Call("get_weather", `{"city":"Paris"}`),
			fakes.Call("get_weather", `{"city":"Tokyo"}`)),
		fakes.Calls("", fakes.Call("save_note", `{"path":"/notes/weather.md","text":"# Weather\n- Paris: sunny, 21C\n- Tokyo: light rain, 17C\n"}`)),
		fakes.Reply("Paris is sunny at 21C and Tokyo has light rain at 17C. I saved both to /notes/weather.md."),
	).WithIdentity("fake", "scripted-demo")
	return agent.New(agent.Config{
		Name:   "demo",
		Model:  model,
		System: []llm.Block{llm.TextBlock("You are a concise travel assistant. Use tools for facts; save notes when asked.")},
		Tools:  []tool.Tool{weather, save},
	})
}

func runDemo(ctx context.Context, e *env, args []string) error {
	c := commands["demo"]
	fs := newFlags(c, e)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError("unexpected argument %q", fs.Arg(0))
	}
	a, err := demoAgent()
	if err != nil {
		return err
	}
	res, err := a.Invoke(ctx, agent.Input{Messages: []llm.Message{llm.User("What's the weather in Paris and Tokyo? Save a note to /notes/weather.md.")}})
	if err != nil {
		return err
	}
	w := e.stdout
	fmt.Fprintf(w, "dageval demo: a scripted agent run (model fake:scripted-demo, no network)\n\n")
	writeTranscript(w, res.State.Messages)
	fmt.Fprintf(w, "\n%d steps, %d input + %d output tokens\n", res.Steps, res.Usage.InputTokens, res.Usage.OutputTokens)
	paths := slices.Sorted(func(yield func(string) bool) {
		for p := range res.State.Files {
			if !yield(p) {
				return
			}
		}
	})
	for _, p := range paths {
		fmt.Fprintf(w, "\nfile %s:\n%s", p, indent(res.State.Files[p].Content, "  "))
	}
	return nil
}

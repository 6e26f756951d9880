package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/dageval/dageval/fakes/cassette"
	"github.com/dageval/dageval/fakes/replay"
)

func init() {
	registerCassette(&command{
		name:    "cassette show",
		summary: "print what each recorded answer says, read through the provider adapters",
		usage:   "[--format text|json] FILE",
		help: `Reads every interaction of a go-vcr cassette and decodes its answer with the
provider adapter the request path selects (/v1/messages: Anthropic Messages,
/chat/completions: OpenAI Chat Completions, /responses: OpenAI Responses,
Azure OpenAI's deployment paths included; /model/{id}/invoke: Claude on
Amazon Bedrock; .../publishers/anthropic/models/{m}:rawPredict: Claude on
Vertex AI), JSON bodies, server-sent events and Bedrock's binary event
streams alike, exactly as a replayed run reads it.

For each interaction it prints index, method, url, status, streamed, api,
outcome and the recorded latency, then either the response (model,
stop_reason, text, thinking when there is any, tool_calls with id, name and
args, usage with input_tokens, output_tokens, cache_read_tokens and
cache_write_tokens, or "unknown" when the answer reported none, and warnings
about oddities the adapter accepted) or the adapter's error. Tool calls a
server sent without an id show the id a replayed run derives for them.
Credentials in URLs are redacted.

The outcome is one of: answer; provider_error (a non-2xx answer or an error
event in a stream: replay hands the agent that error, which is a correct
answer to replay); not_a_model_call (traffic such as an image download or a
tracing endpoint, which no adapter reads); no_adapter (a model call on an API
no adapter speaks); undecodable (a successful answer the adapter cannot read,
or a stream cut off before its end).

Exit codes: 0 nothing is no_adapter or undecodable, 1 some interaction is
(each is named with what to do), 2 the file could not be read or bad flags.`,
		run: runCassetteShow,
	})
}

// shownCassette is the JSON form of show's output.
type shownCassette struct {
	File         string               `json:"file"`
	Match        cassette.Match       `json:"match"`
	Source       string               `json:"source,omitempty"`
	Interactions []replay.Interaction `json:"interactions"`
}

func runCassetteShow(ctx context.Context, e *env, args []string) error {
	c := cassetteCommands["show"]
	fs := newFlags(c, e)
	format := fs.String("format", "text", "output format: text or json")
	files, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	switch {
	case *format != "text" && *format != "json":
		return usageError("--format %q: want text or json", *format)
	case len(files) != 1:
		return usageError("want exactly one cassette file, got %d", len(files))
	}
	cas, err := cassette.Read(files[0])
	if err != nil {
		return &exitError{code: exitBad, msg: err.Error()}
	}
	out := shownCassette{File: files[0], Match: cas.MatchMode(), Interactions: replay.Inspect(ctx, cas)}
	if cas.Meta != nil {
		out.Source = cas.Meta.Source
	}
	if *format == "json" {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if err := enc.Encode(out); err != nil {
			return err
		}
	} else {
		writeShownText(e.stdout, out)
	}
	var failed []string
	for _, in := range out.Interactions {
		if in.Failed() {
			failed = append(failed, fmt.Sprintf("interaction %d (%s %s): %s", in.Index, in.Method, in.URL, failureAdvice(in)))
		}
	}
	if len(failed) > 0 {
		return failures("%d of %d interactions cannot be replayed through an adapter:\n  %s", len(failed), len(out.Interactions), strings.Join(failed, "\n  "))
	}
	return nil
}

// failureAdvice says what is wrong with an interaction replay cannot use
// and what to do about it.
func failureAdvice(in replay.Interaction) string {
	if in.Outcome == replay.OutcomeNoAdapter {
		return "a model call on an API no adapter speaks (known: /v1/messages, /chat/completions, /responses, Bedrock's /model/{id}/invoke, Vertex AI's .../publishers/anthropic/models/{m}:rawPredict); record the run against a provider dageval speaks, or drop the interaction if the agent under test never makes this call"
	}
	return "its successful answer cannot be decoded (" + firstLineOf(in.Error) + "); re-record it (DAGEVAL_RECORD=1), or drop it if the recording was cut short"
}

func firstLineOf(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// writeShownText prints one block per interaction, fields aligned, long
// values continued on indented lines.
func writeShownText(w io.Writer, c shownCassette) {
	fmt.Fprintf(w, "%s: %d interactions, match %s", c.File, len(c.Interactions), c.Match)
	if c.Source != "" {
		fmt.Fprintf(w, ", from %s", c.Source)
	}
	fmt.Fprintln(w)
	for _, in := range c.Interactions {
		fmt.Fprintf(w, "\n[%d] %s %s\n", in.Index, in.Method, in.URL)
		field := func(name string, lines ...string) {
			for i, l := range lines {
				label := ""
				if i == 0 {
					label = name
				}
				fmt.Fprintln(w, strings.TrimRight(fmt.Sprintf("    %-12s %s", label, l), " "))
			}
		}
		api := in.API
		if api == "" {
			api = "(none)"
		}
		field("status", fmt.Sprint(in.Status))
		field("streamed", fmt.Sprint(in.Streamed))
		field("api", api)
		field("outcome", strings.ReplaceAll(string(in.Outcome), "_", " "))
		switch l := in.Latency; {
		case l == nil:
			field("latency", "not recorded")
		case l.FirstEventMS > 0:
			field("latency", fmt.Sprintf("%d ms, first event after %d ms", l.DurationMS, l.FirstEventMS))
		default:
			field("latency", fmt.Sprintf("%d ms", l.DurationMS))
		}
		if in.Response == nil {
			if in.Error != "" {
				field("error", strings.Split(in.Error, "\n")...)
			}
			continue
		}
		r := in.Response
		field("model", r.Model)
		field("stop_reason", r.StopReason)
		if r.Text == "" {
			field("text", `""`)
		} else {
			field("text", strings.Split(r.Text, "\n")...)
		}
		if r.Thinking != "" {
			field("thinking", strings.Split(r.Thinking, "\n")...)
		}
		calls := []string{"(none)"}
		if len(r.ToolCalls) > 0 {
			calls = calls[:0]
			for _, tc := range r.ToolCalls {
				calls = append(calls, fmt.Sprintf("%s %s %s", tc.ID, tc.Name, tc.Args))
			}
		}
		field("tool_calls", calls...)
		for _, tc := range r.InvalidToolCalls {
			field("invalid_call", fmt.Sprintf("%s %s %q: %s", tc.ID, tc.Name, tc.Args, tc.Error))
		}
		u := r.Usage
		if u.Unknown {
			field("usage", "unknown (the answer reported none)")
		} else {
			field("usage", fmt.Sprintf("input_tokens %d, output_tokens %d, cache_read_tokens %d, cache_write_tokens %d",
				u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens))
		}
		for _, w := range r.Warnings {
			field("warning", w)
		}
	}
}

package main

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
/chat/completions: OpenAI Chat Completions, /responses: OpenAI Responses),
JSON bodies and event streams alike, exactly as a replayed run reads it.

For each interaction it prints index, method, url, status, streamed and api,
then either the response (model, stop_reason, text, thinking when there is
any, tool_calls with id, name and args, usage with input_tokens,
output_tokens, cache_read_tokens and cache_write_tokens) or the adapter's
error, for failed answers and answers it cannot read. Tool calls a server sent without an id show the id a replayed
run derives for them. Credentials in URLs are redacted.

Exit codes: 0 every successful answer decoded (recorded failures are shown,
not counted), 1 some 2xx answer could not be decoded, 2 the file could not be
read or bad flags.`,
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
	failed := 0
	for _, in := range out.Interactions {
		if in.Failed() {
			failed++
		}
	}
	if failed > 0 {
		return failures("%d of %d interactions hold a successful answer no adapter could decode", failed, len(out.Interactions))
	}
	return nil
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
		if in.Response == nil {
			field("error", strings.Split(in.Error, "\n")...)
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
		field("usage", fmt.Sprintf("input_tokens %d, output_tokens %d, cache_read_tokens %d, cache_write_tokens %d",
			u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens))
	}
}

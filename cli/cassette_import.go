package cli

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"

	"github.com/dageval/dageval/fakes/cassette"
	"github.com/dageval/dageval/fakes/replay"
)

func init() {
	registerCassette(&command{
		name:    "cassette import",
		summary: "convert a vcrpy cassette into a go-vcr cassette",
		usage:   "--from vcrpy IN -o OUT",
		help: `Converts a vcrpy cassette (.yaml or .yaml.gz; bodies as body.string or
pydantic-ai's parsed_body) into a go-vcr cassette that the fakes recorder
replays. Imported cassettes match requests by method and path in recorded
order (--match order), because their request bodies came from another
client. Credentials in headers and query parameters are redacted; the import
is refused, and nothing is written, when lint's secret checks still find a
credential (for example a key inside a body).

After writing, it warns (on stderr, as OUT:LINE: interaction N: ...) about
every interaction on a path no adapter speaks: a model call on another API,
which replay cannot answer through an adapter, or traffic that is not a
model call at all (an image download, a tracing endpoint), which no adapter
reads. Neither stops the import.

Exit codes: 0 written, 1 refused because of secrets, 2 bad input.`,
		run: runCassetteImport,
	})
}

func runCassetteImport(_ context.Context, e *env, args []string) error {
	c := cassetteCommands["import"]
	fs := newFlags(c, e)
	from := fs.String("from", "", "format of IN; only vcrpy is supported")
	out := fs.String("o", "", "path of the go-vcr cassette to write")
	match := fs.String("match", string(cassette.MatchOrder), "how the cassette is matched on replay: order or body")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	switch {
	case *from == "":
		return usageError("--from is required (supported: vcrpy)")
	case *from != "vcrpy":
		return usageError("--from %q is not supported (supported: vcrpy)", *from)
	case len(pos) != 1:
		return usageError("want exactly one input cassette, got %d", len(pos))
	case *out == "":
		return usageError("-o OUT is required")
	}
	m, err := cassette.ParseMatch(*match)
	if err != nil {
		return usageError("--match: %v", err)
	}
	cas, err := cassette.ImportVCRPyFile(pos[0])
	if err != nil {
		return &exitError{code: exitBad, msg: err.Error()}
	}
	cas.Meta.Match = m
	cas.Path = *out
	envSecrets := cassette.EnvSecrets(e.getenv)
	probs := cassette.Lint(cas, cassette.LintOptions{Secrets: envSecrets})
	var secrets []cassette.Problem
	for _, p := range probs {
		if p.Check == cassette.CheckSecret {
			p.File = pos[0]
			secrets = append(secrets, p)
		}
	}
	if len(secrets) > 0 {
		for _, p := range secrets {
			fmt.Fprintln(e.stdout, p)
		}
		return failures("refusing to write %s: %d secret findings in %s", *out, len(secrets), pos[0])
	}
	if err := cassette.Write(*out, cas, envSecrets); err != nil {
		var pe *os.PathError
		var se *cassette.SecretError
		switch {
		case errors.As(err, &pe):
			return &exitError{code: exitBad, msg: err.Error()}
		case errors.As(err, &se):
			return failures("%v", err)
		}
		return err
	}
	fmt.Fprintf(e.stdout, "imported %d interactions from %s into %s (match %s)\n", len(cas.Interactions), pos[0], *out, m)
	for _, p := range probs {
		if p.Check != cassette.CheckSecret {
			fmt.Fprintf(e.stderr, "warning: %s\n", p)
		}
	}
	written, err := cassette.Read(*out)
	if err != nil {
		return &exitError{code: exitBad, msg: err.Error()}
	}
	for _, w := range unspokenPaths(written) {
		fmt.Fprintf(e.stderr, "warning: %s\n", w)
	}
	return nil
}

// unspokenPaths names the interactions of c on paths no adapter speaks,
// located in c's file.
func unspokenPaths(c *cassette.Cassette) []string {
	var out []string
	for i, it := range c.Interactions {
		u, err := url.Parse(it.Request.URL)
		if err != nil || cassette.APIOf(u.Path) != "" {
			continue
		}
		at := c.Path
		if i < len(c.Lines) && c.Lines[i] > 0 {
			at = fmt.Sprintf("%s:%d", c.Path, c.Lines[i])
		}
		what := "not a model call (no adapter reads it; a replayed agent never asks for it)"
		if replay.IsModelCall(it) {
			what = "a model call on an API no adapter speaks (known: /v1/messages, /chat/completions, /responses); replay cannot answer the agent from it"
		}
		out = append(out, fmt.Sprintf("%s: interaction %d: %s %s: %s", at, i, it.Request.Method, u.Path, what))
	}
	return out
}

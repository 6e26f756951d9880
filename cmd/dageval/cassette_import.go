package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/dageval/dageval/fakes/cassette"
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
	return nil
}

package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/dageval/dageval/fakes/cassette"
)

// listFlag collects a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error {
	*l = append(*l, v)
	return nil
}

func init() {
	registerCassette(&command{
		name:    "cassette lint",
		summary: "check cassettes for parse errors, secrets, empty recordings, duplicates and unreachable interactions",
		usage:   "[--match body|order] [--ignore-field PATH]... [--secret-env NAME]... FILE...",
		help: `Checks go-vcr cassettes (and vcrpy cassettes, before import) and prints one
line per problem as FILE:LINE: interaction N: CHECK: message. The checks:

  parse        the file reads as a cassette; URLs parse; JSON bodies and the
               data lines of event streams are valid JSON
  secret       sensitive headers (authorization, x-api-key, api-key, cookies,
               OpenAI organization and project) hold only redaction markers;
               no key-shaped string (sk-..., AIza..., ...) and no value of the
               API-key environment variables appears anywhere
  empty        the cassette has no interactions, or only error answers, so a
               replayed run can only fail
  error-answer (a warning) an interaction's answer is an error status, which
               replay hands out as the provider's answer
  duplicate    body matching only: an interaction repeats an earlier one of
               its lane exactly; in order matching a repeat is a genuine
               repeated request that replay reaches
  unreachable  body matching only: an earlier interaction answers the same
               request (lane, method, path, query, canonical body) with a 2xx
               response, so replay never hands this one out; in order
               matching every interaction is reachable

Each cassette is checked in the match mode it declares (dageval.match,
"body" when absent) unless --match overrides it.

Warnings are printed as CHECK (warning) and do not change the exit code.

Exit codes: 0 no problems (warnings allowed), 1 problems found, 2 a file
could not be read or bad flags.`,
		run: runCassetteLint,
	})
}

func runCassetteLint(_ context.Context, e *env, args []string) error {
	c := cassetteCommands["lint"]
	fs := newFlags(c, e)
	match := fs.String("match", "", "match mode to check against: body or order (default: what the cassette declares)")
	var ignore, secretEnv listFlag
	fs.Var(&ignore, "ignore-field", "request-body path ignored when matching, e.g. **.cache_control (repeatable)")
	fs.Var(&secretEnv, "secret-env", "another environment variable whose value must not appear (repeatable)")
	files, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return usageError("no cassette files given")
	}
	opts := cassette.LintOptions{IgnoreFields: ignore, Secrets: cassette.EnvSecrets(e.getenv, secretEnv...)}
	if *match != "" {
		m, err := cassette.ParseMatch(*match)
		if err != nil {
			return usageError("--match: %v", err)
		}
		opts.Match = m
	}
	total, bad, warnings := 0, 0, 0
	var unreadable []string
	for _, f := range files {
		probs, err := cassette.LintFile(f, opts)
		if err != nil {
			unreadable = append(unreadable, err.Error())
			continue
		}
		n := 0
		for _, p := range probs {
			fmt.Fprintln(e.stdout, p)
			if p.Warning {
				warnings++
			} else {
				n++
			}
		}
		if n > 0 {
			bad++
			total += n
		}
	}
	if len(unreadable) > 0 {
		return &exitError{code: exitBad, msg: strings.Join(unreadable, "\n")}
	}
	if total > 0 {
		return failures("%d problems in %d of %d files", total, bad, len(files))
	}
	if warnings > 0 {
		fmt.Fprintf(e.stdout, "%d files ok, %d warnings\n", len(files), warnings)
		return nil
	}
	fmt.Fprintf(e.stdout, "%d files ok\n", len(files))
	return nil
}

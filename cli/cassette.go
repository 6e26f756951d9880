package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

// cassetteCommands are the subcommands of "dageval cassette". Each lives in
// its own file (cassette_<name>.go) and registers itself with registerCassette.
var cassetteCommands = map[string]*command{}

// registerCassette adds a "dageval cassette <name>" subcommand; c.name is
// the full name, e.g. "cassette lint".
func registerCassette(c *command) {
	cassetteCommands[strings.TrimPrefix(c.name, "cassette ")] = c
}

func init() {
	register(&command{
		name:    "cassette",
		summary: "import, lint and show recorded model traffic (cassettes)",
		usage:   "<subcommand> [flags] [arguments]",
		help: `Works with cassettes: go-vcr YAML files of recorded HTTP exchanges with
model providers, which the fakes recorder replays in tests and evals.`,
		run: runCassette,
	})
}

func runCassette(ctx context.Context, e *env, args []string) error {
	return runGroup(ctx, e, "cassette", cassetteCommands, 8, args)
}

// parseInterleaved parses flags that may come before, between or after the
// positional arguments ("IN -o OUT" as well as "-o OUT IN"), and returns the
// positional arguments. A lone "--" ends flag parsing.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := parse(fs, args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if len(args) > 0 && len(rest) < len(args) && args[len(args)-len(rest)-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// runGroup runs a subcommand of the command group name (cassette,
// profile): its usage on -h or none given, an error naming the group for
// an unknown one. width aligns the subcommands' summaries.
func runGroup(ctx context.Context, e *env, name string, subs map[string]*command, width int, args []string) error {
	if len(args) == 0 {
		printGroupUsage(e.stderr, name, subs, width)
		return usageError("")
	}
	switch args[0] {
	case "-h", "--help", "-help", "help":
		printGroupUsage(e.stdout, name, subs, width)
		return flag.ErrHelp
	}
	sub, ok := subs[args[0]]
	if !ok {
		printGroupUsage(e.stderr, name, subs, width)
		return usageError("unknown subcommand %q", args[0])
	}
	return sub.run(ctx, e, args[1:])
}

func printGroupUsage(w io.Writer, name string, subs map[string]*command, width int) {
	c := commands[name]
	fmt.Fprintf(w, "Usage: dageval %s %s\n\n%s\n\nSubcommands:\n", name, c.usage, strings.TrimSpace(c.help))
	for _, n := range slices.Sorted(maps.Keys(subs)) {
		fmt.Fprintf(w, "  %-*s %s\n", width, n, subs[n].summary)
	}
	fmt.Fprintf(w, "\nRun 'dageval %s <subcommand> --help' for its flags.\n", name)
}

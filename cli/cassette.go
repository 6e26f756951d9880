package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"sort"
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
	if len(args) == 0 {
		printCassetteUsage(e.stderr)
		return usageError("")
	}
	switch args[0] {
	case "-h", "--help", "-help", "help":
		printCassetteUsage(e.stdout)
		return flag.ErrHelp
	}
	sub, ok := cassetteCommands[args[0]]
	if !ok {
		printCassetteUsage(e.stderr)
		return usageError("unknown subcommand %q", args[0])
	}
	return sub.run(ctx, e, args[1:])
}

func printCassetteUsage(w io.Writer) {
	c := commands["cassette"]
	fmt.Fprintf(w, "Usage: dageval cassette %s\n\n%s\n\nSubcommands:\n", c.usage, strings.TrimSpace(c.help))
	names := make([]string, 0, len(cassetteCommands))
	for n := range cassetteCommands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-8s %s\n", n, cassetteCommands[n].summary)
	}
	fmt.Fprintf(w, "\nRun 'dageval cassette <subcommand> --help' for its flags.\n")
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

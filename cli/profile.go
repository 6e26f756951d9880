package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
)

// profileCommands are the subcommands of "dageval profile", each in its own
// file (profile_<name>.go), registered with registerProfile.
var profileCommands = map[string]*command{}

// registerProfile adds a "dageval profile <name>" subcommand; c.name is the
// full name, e.g. "profile import-deepagents".
func registerProfile(c *command) {
	profileCommands[strings.TrimPrefix(c.name, "profile ")] = c
}

func init() {
	register(&command{
		name:    "profile",
		summary: "make harness profile files (import Deep Agents' own text)",
		usage:   "<subcommand> [flags]",
		help: `Works with harness profile files: Deep Agents HarnessProfileConfig YAML that
assemble, run and suites load with --profile or a suite's profiles: key.`,
		run: runProfile,
	})
}

func runProfile(ctx context.Context, e *env, args []string) error {
	if len(args) == 0 {
		printProfileUsage(e.stderr)
		return usageError("")
	}
	switch args[0] {
	case "-h", "--help", "-help", "help":
		printProfileUsage(e.stdout)
		return flag.ErrHelp
	}
	sub, ok := profileCommands[args[0]]
	if !ok {
		printProfileUsage(e.stderr)
		return usageError("unknown subcommand %q", args[0])
	}
	return sub.run(ctx, e, args[1:])
}

func printProfileUsage(w io.Writer) {
	c := commands["profile"]
	fmt.Fprintf(w, "Usage: dageval profile %s\n\n%s\n\nSubcommands:\n", c.usage, strings.TrimSpace(c.help))
	names := make([]string, 0, len(profileCommands))
	for n := range profileCommands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-18s %s\n", n, profileCommands[n].summary)
	}
	fmt.Fprintf(w, "\nRun 'dageval profile <subcommand> --help' for its flags.\n")
}

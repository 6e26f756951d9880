package cli

import (
	"context"
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
	return runGroup(ctx, e, "profile", profileCommands, 18, args)
}

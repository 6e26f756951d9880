package cli

import (
	"context"
	"errors"
	"flag"
)

func init() {
	register(&command{
		name:    "help",
		summary: "show the commands, or one command's help",
		usage:   "[command]",
		help:    "Without an argument, lists the commands. With a command name, prints that command's usage and flags.",
		run:     runHelp,
	})
}

func runHelp(ctx context.Context, e *env, args []string) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "-help" {
		printUsage(e.stdout)
		return nil
	}
	c, ok := commands[args[0]]
	if !ok {
		if s := nearest(args[0], commandNames()); s != "" {
			return usageError("unknown command %q; did you mean %q?", args[0], s)
		}
		return usageError("unknown command %q", args[0])
	}
	// Every command prints its help on --help; route it to stdout.
	he := *e
	he.stderr = e.stdout
	if err := c.run(ctx, &he, []string{"--help"}); err != nil && !errors.Is(err, flag.ErrHelp) {
		return err
	}
	return nil
}

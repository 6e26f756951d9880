package cli

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
)

// version is the release this source tree describes.
const version = "0.1.0-dev"

func init() {
	register(&command{
		name:    "version",
		summary: "print the dageval version",
		usage:   "",
		help:    "Prints the dageval version, the Go version it was built with, and the VCS revision when the build recorded one.",
		run:     runVersion,
	})
}

func runVersion(_ context.Context, e *env, args []string) error {
	c := commands["version"]
	fs := newFlags(c, e)
	if err := parse(fs, args); err != nil {
		return err
	}
	rev := ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				rev = " " + s.Value[:12]
			}
		}
	}
	fmt.Fprintf(e.stdout, "dageval %s%s (%s)\n", version, rev, runtime.Version())
	return nil
}

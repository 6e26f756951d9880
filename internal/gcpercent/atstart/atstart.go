// Package atstart raises the collector's target while the dageval binary's packages are still initialising.
//
// The packages the binary links allocate about 3 MiB in their init
// functions, so at the default target the first collection started before
// main and a short command (assemble, validate, version) paid for a whole
// cycle of the collector and its worker threads. The linker runs the
// init functions in the lexical order of the ready packages, so this one
// runs once runtime/debug is scheduled, about half-way (with some 2 MiB
// allocated), still below the 4 MiB at which the first collection starts.
// Only the command imports it: a program that embeds the CLI keeps its own
// setting until cli.Main runs.
package atstart

import "github.com/dageval/dageval/internal/gcpercent"

func init() { gcpercent.Raise() }

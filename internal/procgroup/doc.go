// Package procgroup runs a command in its own process group, so that a time limit kills all it started.
package procgroup

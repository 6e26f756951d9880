// Package gocli is a team's own Go agent — a typed tool, a custom middleware, a Go check and a company model gateway — run and evaluated by a command built on cli.Main (cmd/evals).
package gocli

// Package cassette reads, lints, redacts, imports and writes the go-vcr cassettes dageval records and replays model calls from.
package cassette

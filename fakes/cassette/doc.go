// Package cassette is the go-vcr cassette format as dageval records and replays model calls in it: reading, canonical request matching, redaction, lint, vcrpy import and writing.
package cassette

// Package tool defines the Tool interface and typed tools whose JSON Schema is derived from a Go struct and enforced on every call.
package tool

// Package builtin wires the provider adapters into a resolver, so callers get every built-in provider with one call.
package builtin

// Package deepagents mirrors evals of Deep Agents' behaviour suite as a dageval suite, with the scripted model its cassettes were recorded against.
package deepagents

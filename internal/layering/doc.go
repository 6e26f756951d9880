// Package layering holds the test that keeps package imports in the order DESIGN.md sets.
package layering

// Package rubrics defines rubric files, the deterministic checks a suite runs against an agent run, and the run record those checks read.
package rubrics

// Package evals loads eval suites, expands them into a case × model × profile × epoch matrix, runs each cell through an assembled deep agent, scores it and writes the results.
package evals

// Package reports loads a run's output directory, renders it as a terminal table, markdown, JSON, JUnit XML or a self-contained HTML page, and compares two runs with paired statistics to gate changes in CI.
package reports

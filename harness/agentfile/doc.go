// Package agentfile reads agent files, the YAML form of a harness.Config, and reports every problem with its file, line, column and key.
package agentfile

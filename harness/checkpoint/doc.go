// Package checkpoint holds durable agent.Checkpointer implementations, starting with a SQLite file that stores each thread as a log of state deltas.
package checkpoint

// Package backendtest checks that a file backend honours the backend.Backend contract, in the spirit of testing/fstest.TestFS.
package backendtest

// Package coding holds the coding eval suite, whose agent works in a bubblewrap sandbox, and the scripted provider its cassettes were recorded against.
package coding

// Package quickstart holds the quickstart eval suite and the scripted provider its cassettes were recorded against.
package quickstart

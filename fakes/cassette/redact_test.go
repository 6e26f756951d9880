package cassette_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/dageval/dageval/fakes/cassette"
)

func TestRedactURL(t *testing.T) {
	assert.Equal(t, "https://generativelanguage.googleapis.com/v1beta/models/g:generateContent?alt=sse&key=REDACTED",
		cassette.RedactURL("https://generativelanguage.googleapis.com/v1beta/models/g:generateContent?key=AIzaSyA-secret&alt=sse"))
	assert.Equal(t, "https://api.anthropic.com/v1/messages?beta=true", cassette.RedactURL("https://api.anthropic.com/v1/messages?beta=true"))
}

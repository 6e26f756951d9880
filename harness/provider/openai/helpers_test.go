package openai_test

import "github.com/dageval/dageval/harness/provider/internal/providertest"

// The loopback servers and stream helpers shared with the Anthropic adapter's tests.
var (
	newScript     = providertest.NewScript
	reply         = providertest.Reply
	sse           = providertest.SSE
	fixedServer   = providertest.FixedServer
	crossedServer = providertest.CrossedServer
	collect       = providertest.Collect
	userRequest   = providertest.UserRequest
	thirds        = providertest.Thirds
)

package recorder

import (
	"github.com/dageval/dageval/harness/provider"
)

// ProviderConfig returns base with what a provider resolver needs to send its
// models' calls through r: r's client, and in replay mode Replay (no API
// key is needed or sent) and no retries, since a recorded failure is the
// answer and a miss is a transport error that repeating cannot fix. While
// recording, base's retries apply: the recorder drops a failed attempt that
// was retried, so the cassette holds only the answer that counted. Pass the
// result to provider.NewResolver or builtin.NewResolver.
func (r *Recorder) ProviderConfig(base provider.Config) provider.Config {
	c := base.Clone()
	c.HTTPClient = r.Client()
	c.Replay = r.mode == ModeReplay
	if c.Replay {
		c.Retry.MaxAttempts = 1
	}
	return c
}

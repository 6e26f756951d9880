package recorder

import (
	"github.com/dageval/dageval/harness/provider"
)

// ProviderConfig returns base with what a provider resolver needs to send its
// models' calls through r: r's client, Replay in replay mode (no API key is
// needed or sent), and no retries unless r is live. Retries stay off while
// recording because a retried call would leave its failed attempt in the
// cassette, where replay, which never retries, would hand it out as the
// answer; in replay a recorded failure is the answer and a miss is a
// transport error that repeating cannot fix. Pass the result to
// provider.NewResolver or builtin.NewResolver.
func (r *Recorder) ProviderConfig(base provider.Config) provider.Config {
	c := base.Clone()
	c.HTTPClient = r.Client()
	c.Replay = r.mode == ModeReplay
	if r.mode != ModeLive {
		c.Retry.MaxAttempts = 1
	}
	return c
}

package replay

import (
	"github.com/dageval/dageval/fakes/recorder"
	"github.com/dageval/dageval/harness/provider"
	"github.com/dageval/dageval/harness/provider/builtin"
)

// NewResolver returns a resolver with the built-in provider entries and
// adapters whose models send every call through rec. base supplies the
// shared fields (Logger, Timeout, MaxTokens, Getenv, retry backoff); rec
// sets the HTTP client, replay mode and retries (see
// recorder.Recorder.ProviderConfig). In replay mode models need no API key.
func NewResolver(rec *recorder.Recorder, base provider.Config) *provider.Resolver {
	return builtin.NewResolver(rec.ProviderConfig(base))
}

// Open opens the cassette at path with opts (mode, match, secrets, ...) and
// returns its recorder and a resolver over it. Stop the recorder when the
// run ends; in the recording modes that saves the cassette.
func Open(path string, base provider.Config, opts ...recorder.Option) (*recorder.Recorder, *provider.Resolver, error) {
	rec, err := recorder.New(path, opts...)
	if err != nil {
		return nil, nil, err
	}
	return rec, NewResolver(rec, base), nil
}

// OpenTest is Open for tests: it fails t when the cassette cannot be opened
// and stops the recorder when the test ends, failing t if saving fails.
func OpenTest(t recorder.TB, path string, base provider.Config, opts ...recorder.Option) (*recorder.Recorder, *provider.Resolver) {
	t.Helper()
	rec, r, err := Open(path, base, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := rec.Stop(); err != nil {
			t.Error(err)
		}
	})
	return rec, r
}

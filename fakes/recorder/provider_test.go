package recorder_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/fakes/recorder"
	"github.com/dageval/dageval/harness/provider"
)

func TestProviderConfigFollowsTheMode(t *testing.T) {
	imported := filepath.Join("..", "..", "cassettes", "thirdparty", "pydantic-ai", "imported", "test_openai", "test_text_response.yaml")
	base := provider.Config{Timeout: 42, Retry: provider.RetryPolicy{MaxAttempts: 5, InitialBackoff: 7}, Headers: map[string]string{"X-A": "b"}}
	tests := []struct {
		mode     recorder.Mode
		path     string
		replay   bool
		attempts int
	}{
		{recorder.ModeReplay, imported, true, 1},
		{recorder.ModeRecord, filepath.Join(t.TempDir(), "new.yaml"), false, 5},
		{recorder.ModeRecordMissing, filepath.Join(t.TempDir(), "new.yaml"), false, 5},
		{recorder.ModeLive, "", false, 5},
	}
	for _, tt := range tests {
		t.Run(string(tt.mode), func(t *testing.T) {
			rec, err := recorder.New(tt.path, recorder.WithMode(tt.mode), recorder.WithGetenv(noEnv))
			require.NoError(t, err)
			defer rec.Stop()
			c := rec.ProviderConfig(base)
			assert.Equal(t, tt.replay, c.Replay)
			assert.Equal(t, tt.attempts, c.Retry.MaxAttempts)
			assert.Equal(t, base.Retry.InitialBackoff, c.Retry.InitialBackoff)
			assert.Equal(t, base.Timeout, c.Timeout)
			require.NotNil(t, c.HTTPClient)
			assert.Same(t, rec, c.HTTPClient.Transport)
			c.Headers["X-A"] = "changed"
			assert.Equal(t, "b", base.Headers["X-A"], "base is not shared")
		})
	}
}

package profile_test

import (
	"testing"

	"github.com/dageval/dageval/harness/profile"
	"github.com/dageval/dageval/internal/fuzzseed"
)

// FuzzParseConfig feeds the profile-file parser mutations of the example
// profiles.
func FuzzParseConfig(f *testing.F) {
	fuzzseed.Add(f, 20, "../../evals/examples/profiles/*.yaml", "../../evals/examples/quickstart/profiles/*.yaml")
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := profile.ParseConfig("profile.yaml", data)
		if err == nil && c == nil {
			t.Fatal("no profile and no error")
		}
	})
}

package harness

import (
	"fmt"
	"sync"

	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/profile"
	"github.com/dageval/dageval/harness/provider"
	"github.com/dageval/dageval/harness/provider/builtin"
)

// ModelResolver resolves "provider:model" specs the way Deep Agents'
// resolve_model does: the provider profile's init options (static, then
// factory, then none from the caller) configure the model the resolver
// builds. Resolving never needs an API key; a missing key surfaces at the
// first call.
func ModelResolver(profiles *profile.Registry, models *provider.Resolver) func(spec string) (llm.ChatModel, error) {
	if profiles == nil {
		profiles = profile.Default()
	}
	if models == nil {
		models = defaultModels()
	}
	return func(spec string) (llm.ChatModel, error) {
		opts, err := profiles.ApplyProvider(spec, nil)
		if err != nil {
			return nil, fmt.Errorf("provider profile for %s: %w", spec, err)
		}
		return models.ResolveWith(spec, opts)
	}
}

// defaultModels is the resolver of the built-in providers, built once: it
// holds no state a resolution changes.
var defaultModels = sync.OnceValue(func() *provider.Resolver { return builtin.NewResolver(provider.Config{}) })

// Package azure adapts Azure OpenAI's deployment API (Chat Completions and Responses, through openai-go/v3's azure package) to llm.ChatModel and llm.StreamingModel.
//
// Choices a careful user would expect, and why:
//
//   - The model half of a spec is the deployment name: azure_openai:my-gpt
//     calls /openai/deployments/my-gpt/chat/completions, or
//     /openai/responses with "model": "my-gpt" when use_responses_api is
//     set. Chat Completions is the default, as in Deep Agents.
//   - The endpoint is the entry's base_url (AZURE_OPENAI_ENDPOINT for the
//     built-in azure_openai entry) and must be https: the SDK never sends
//     Azure credentials over plain HTTP, and its loopback exception would
//     bypass the recorder.
//   - api-version: the entry's api_version, then OPENAI_API_VERSION (as
//     LangChain's AzureChatOpenAI reads it), then AZURE_OPENAI_API_VERSION,
//     then DefaultAPIVersion. It is part of the recorded URL and so of what
//     replay matches.
//   - Credentials: the api-key (AZURE_OPENAI_API_KEY, or the entry's
//     api_key_env) when it is set; else a Microsoft Entra ID token, from
//     AZURE_OPENAI_AD_TOKEN when set, else from azidentity's default chain
//     (environment service principal, workload identity, managed identity,
//     Azure CLI), built at the first call.
//   - A replay reads no credentials: a placeholder key satisfies the SDK,
//     and an unset AZURE_OPENAI_ENDPOINT becomes a placeholder host, since
//     replay matching ignores the host.
package azure

import (
	"context"
	"fmt"
	"net/url"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	sdkazure "github.com/openai/openai-go/v3/azure"
	"github.com/openai/openai-go/v3/option"

	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/provider"
	"github.com/dageval/dageval/harness/provider/openai"
)

// DefaultAPIVersion is the api-version sent when neither the entry nor the
// environment names one: a version serving both Chat Completions and the
// Responses API on deployment endpoints (Azure's Responses API docs use it).
const DefaultAPIVersion = "2025-04-01-preview"

// Variables the api-version and a static Entra ID token are read from, in
// order, when the entry does not say.
var (
	APIVersionEnv = []string{"OPENAI_API_VERSION", "AZURE_OPENAI_API_VERSION"}
	TokenEnv      = "AZURE_OPENAI_AD_TOKEN"
)

// Register installs the Azure OpenAI adapter for provider.KindAzureOpenAI.
func Register(r *provider.Resolver) error {
	return r.Register(provider.KindAzureOpenAI, func(c provider.Config) (llm.ChatModel, error) { return New(c) })
}

// New builds a model from cfg. It reads no credentials; they are looked up
// at the first call (never in replay).
func New(cfg provider.Config) (*openai.Model, error) {
	cfg = cfg.Clone()
	if cfg.Kind == "" {
		cfg.Kind = provider.KindAzureOpenAI
	}
	if cfg.Provider == "" {
		cfg.Provider = "azure_openai"
	}
	if cfg.Kind != provider.KindAzureOpenAI {
		return nil, fmt.Errorf("azure: config is for kind %s", cfg.Kind)
	}
	if u, err := url.Parse(cfg.BaseURL); cfg.BaseURL != "" && (err != nil || u.Scheme != "https") {
		return nil, fmt.Errorf("provider %s: base_url %q must be an https URL: the Azure SDK sends credentials over TLS only", cfg.Provider, cfg.BaseURL)
	}
	return openai.NewOn(cfg, &platform{cfg: cfg})
}

// DecodeChatAnswer and DecodeResponsesAnswer return what the adapter makes
// of a recorded answer from a deployment endpoint. The wire format is
// OpenAI's, so they are the openai adapter's decoders.
var (
	DecodeChatAnswer      = openai.DecodeChatAnswer
	DecodeResponsesAnswer = openai.DecodeResponsesAnswer
)

type platform struct{ cfg provider.Config }

// ClientOptions implements openai.Platform.
func (p *platform) ClientOptions(context.Context) ([]option.RequestOption, error) {
	c := p.cfg
	version := c.APIVersion
	if version == "" {
		version, _ = c.FirstEnv(APIVersionEnv...)
	}
	if version == "" {
		version = DefaultAPIVersion
	}
	opts := []option.RequestOption{sdkazure.WithEndpoint(c.BaseURL, version)}
	if c.Replay {
		return append(opts, sdkazure.WithAPIKey("replay")), nil
	}
	key, err := c.Key()
	if err != nil {
		return nil, err
	}
	switch tok := c.Env(TokenEnv); {
	case key != "":
		return append(opts, sdkazure.WithAPIKey(key)), nil
	case tok != "":
		return append(opts, sdkazure.WithTokenCredential(&classified{p: p, next: staticToken(tok)})), nil
	}
	cred, err := azidentity.NewDefaultAzureCredential(nil)
	if err != nil {
		return nil, p.authError(fmt.Errorf("building the Azure default credential (or set AZURE_OPENAI_API_KEY): %w", err))
	}
	return append(opts, sdkazure.WithTokenCredential(&classified{p: p, next: cred})), nil
}

func (p *platform) authError(err error) *llm.Error {
	return &llm.Error{Kind: llm.ErrAuthentication, Provider: p.cfg.Provider, Message: p.cfg.Scrub(err.Error()), Err: err}
}

// staticToken is an Entra ID token handed over ready-made.
type staticToken string

func (t staticToken) GetToken(context.Context, policy.TokenRequestOptions) (azcore.AccessToken, error) {
	// Its expiry is unknown; a fresh hour on each request keeps the SDK
	// from asking again, and Azure itself refuses it once it has expired.
	return azcore.AccessToken{Token: string(t), ExpiresOn: time.Now().Add(time.Hour)}, nil
}

// classified turns a failure to get a token into an authentication error,
// which is what it is.
type classified struct {
	p    *platform
	next azcore.TokenCredential
}

func (c *classified) GetToken(ctx context.Context, o policy.TokenRequestOptions) (azcore.AccessToken, error) {
	t, err := c.next.GetToken(ctx, o)
	if err != nil {
		return t, c.p.authError(fmt.Errorf("Microsoft Entra ID token: %w", err))
	}
	return t, nil
}

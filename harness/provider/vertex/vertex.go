// Package vertex adapts Claude on Google Vertex AI (rawPredict) to llm.ChatModel and llm.StreamingModel.
//
// Choices a careful user would expect, and why:
//
//   - Credentials: a static OAuth access token from GOOGLE_OAUTH_ACCESS_TOKEN
//     (for example `gcloud auth print-access-token`) when it is set, else
//     Application Default Credentials (GOOGLE_APPLICATION_CREDENTIALS, the
//     gcloud application-default login, the metadata server), found at the
//     first call.
//   - Project: the entry's project, then ANTHROPIC_VERTEX_PROJECT_ID, then
//     GOOGLE_CLOUD_PROJECT, then the credentials' own project.
//   - Region: the entry's region, then CLOUD_ML_REGION, then
//     GOOGLE_CLOUD_LOCATION, then "global": the global endpoint is the one
//     Anthropic recommends and the one without the regional surcharge
//     newer models carry.
//   - A replay reads no credentials: a placeholder token authorises the
//     calls, placeholders stand in for an unset project, and the recorder
//     matches Vertex paths ignoring the project and location segments.
//   - The body carries anthropic_version vertex-2023-10-16, the value
//     Vertex documents; the SDK would otherwise send its own API version.
package vertex

import (
	"context"
	"fmt"
	"sync"

	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"

	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/provider"
	"github.com/dageval/dageval/harness/provider/anthropic"
)

// AnthropicVersion is the anthropic_version Vertex AI documents for Claude.
const AnthropicVersion = "vertex-2023-10-16"

// DefaultRegion is the location used when neither the entry nor the
// environment names one.
const DefaultRegion = "global"

// Variables the project, the region and a static token are read from, in
// order, when the entry does not say.
var (
	ProjectEnv = []string{"ANTHROPIC_VERTEX_PROJECT_ID", "GOOGLE_CLOUD_PROJECT"}
	RegionEnv  = []string{"CLOUD_ML_REGION", "GOOGLE_CLOUD_LOCATION"}
	TokenEnv   = "GOOGLE_OAUTH_ACCESS_TOKEN"
)

// scope is the OAuth scope Vertex AI calls need.
const scope = "https://www.googleapis.com/auth/cloud-platform"

// replayProject stands in for an unset project in a replay; the recorder
// matches Vertex paths without their project and location.
const replayProject = "replay-project"

// Register installs the Vertex adapter for provider.KindVertex.
func Register(r *provider.Resolver) error {
	return r.Register(provider.KindVertex, func(c provider.Config) (llm.ChatModel, error) { return New(c) })
}

// New builds a model from cfg. It reads no credentials and no environment;
// they are looked up at the first call (never in replay).
func New(cfg provider.Config) (*anthropic.Model, error) {
	cfg = cfg.Clone()
	if cfg.Kind == "" {
		cfg.Kind = provider.KindVertex
	}
	if cfg.Provider == "" {
		cfg.Provider = "vertex"
	}
	if cfg.Kind != provider.KindVertex {
		return nil, fmt.Errorf("vertex: config is for kind %s", cfg.Kind)
	}
	return anthropic.NewOn(cfg, &platform{cfg: cfg})
}

// DecodeAnswer returns what the adapter makes of a recorded rawPredict or
// streamRawPredict answer, through the same SDK client and conversion code
// as a live call (see anthropic.DecodeAnswer).
func DecodeAnswer(ctx context.Context, a provider.RecordedAnswer) (*llm.Response, error) {
	m, err := New(provider.DecodeConfig(provider.KindVertex, a))
	if err != nil {
		return nil, err
	}
	return anthropic.DecodeAnswerWith(ctx, m, a)
}

type platform struct{ cfg provider.Config }

// ClientOptions implements anthropic.Platform.
func (p *platform) ClientOptions(ctx context.Context) ([]option.RequestOption, error) {
	c := p.cfg
	region, project := c.Region, c.Project
	if region == "" {
		region, _ = c.FirstEnv(RegionEnv...)
	}
	if region == "" {
		region = DefaultRegion
	}
	if project == "" {
		project, _ = c.FirstEnv(ProjectEnv...)
	}
	var creds *google.Credentials
	var tok string
	if !c.Replay {
		tok = c.Env(TokenEnv)
	}
	switch {
	case c.Replay:
		if project == "" {
			project = replayProject
		}
		creds = &google.Credentials{TokenSource: oauth2.StaticTokenSource(&oauth2.Token{AccessToken: "replay", TokenType: "Bearer"})}
	case tok != "":
		creds = &google.Credentials{TokenSource: oauth2.StaticTokenSource(&oauth2.Token{AccessToken: tok, TokenType: "Bearer"})}
	case project == "":
		// Only the credentials can say which project; finding them may ask
		// the metadata server, which is why it waits for a live call.
		found, err := google.FindDefaultCredentials(ctx, scope)
		if err != nil {
			return nil, p.authError(fmt.Errorf("finding Google Application Default Credentials: %w", err))
		}
		project = found.ProjectID
		creds = &google.Credentials{ProjectID: found.ProjectID, TokenSource: &classified{p: p, next: found.TokenSource}}
	default:
		creds = &google.Credentials{ProjectID: project, TokenSource: &adc{p: p, ctx: ctx}}
	}
	if project == "" {
		return nil, p.authError(fmt.Errorf("no Google Cloud project for %s: set ANTHROPIC_VERTEX_PROJECT_ID or GOOGLE_CLOUD_PROJECT, or project: in the provider entry", c.Identity()))
	}
	return []option.RequestOption{withCredentials(region, project, creds.TokenSource, c.Client()), option.WithJSONSet("anthropic_version", AnthropicVersion)}, nil
}

func (p *platform) authError(err error) *llm.Error {
	return &llm.Error{Kind: llm.ErrAuthentication, Provider: p.cfg.Provider, Message: p.cfg.Scrub(err.Error()), Err: err}
}

// adc finds Application Default Credentials when the first token is needed.
type adc struct {
	p   *platform
	ctx context.Context

	once sync.Once
	ts   oauth2.TokenSource
	err  error
}

func (a *adc) Token() (*oauth2.Token, error) {
	a.once.Do(func() {
		found, err := google.FindDefaultCredentials(a.ctx, scope)
		if err != nil {
			a.err = a.p.authError(fmt.Errorf("finding Google Application Default Credentials: %w", err))
			return
		}
		a.ts = &classified{p: a.p, next: found.TokenSource}
	})
	if a.err != nil {
		return nil, a.err
	}
	return a.ts.Token()
}

// classified turns a failure to mint a token into an authentication error,
// which is what it is; unwrapped it would read as a connection failure.
type classified struct {
	p    *platform
	next oauth2.TokenSource
}

func (c *classified) Token() (*oauth2.Token, error) {
	t, err := c.next.Token()
	if err != nil {
		return nil, c.p.authError(fmt.Errorf("Google OAuth token: %w", err))
	}
	return t, nil
}

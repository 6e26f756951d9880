// Package bedrock adapts Claude on Amazon Bedrock (InvokeModel, through anthropic-sdk-go/v2's bedrock option) to llm.ChatModel and llm.StreamingModel.
//
// Choices a careful user would expect, and why:
//
//   - Credentials: a Bedrock API key (AWS_BEARER_TOKEN_BEDROCK, or the
//     entry's api_key_env) is sent as a bearer token; otherwise requests are
//     signed with SigV4, from AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and
//     AWS_SESSION_TOKEN when they are set, else from the AWS default chain
//     (AWS_PROFILE, shared config and credentials files, SSO, web identity,
//     container and instance roles), loaded at the first call.
//   - Region: the entry's region, then AWS_REGION, then AWS_DEFAULT_REGION,
//     then the shared config's. Calls go to the region's bedrock-runtime
//     endpoint unless base_url says otherwise.
//   - A replay reads no credentials and no region: requests are signed with
//     a fixed placeholder key, and the recorder matches ignoring the
//     signature and signing date, which it never stores.
//   - The body carries anthropic_version bedrock-2023-05-31, the value
//     Bedrock documents for Claude; the SDK would otherwise send its own
//     API version there.
//   - Streams arrive in AWS's binary event-stream framing; the SDK turns
//     them into the Messages API's server-sent events above the HTTP client,
//     so the recorder keeps the bytes as they came and the adapter reads
//     the events as it does Anthropic's.
package bedrock

import (
	"context"
	"errors"
	"fmt"

	sdkbedrock "github.com/anthropics/anthropic-sdk-go/v2/bedrock"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"

	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/provider"
	"github.com/dageval/dageval/harness/provider/anthropic"
)

// AnthropicVersion is the anthropic_version Bedrock documents for Claude's
// Messages API.
const AnthropicVersion = "bedrock-2023-05-31"

// RegionEnv are the variables the region is read from, in order, when the
// entry names none.
var RegionEnv = []string{"AWS_REGION", "AWS_DEFAULT_REGION"}

// replayRegion stands in for the region of a replay: it only picks the host,
// which replay matching ignores.
const replayRegion = "us-east-1"

// Register installs the Bedrock adapter for provider.KindBedrock.
func Register(r *provider.Resolver) error {
	return r.Register(provider.KindBedrock, func(c provider.Config) (llm.ChatModel, error) { return New(c) })
}

// New builds a model from cfg. It reads no credentials and no environment;
// they are looked up at the first call (never in replay).
func New(cfg provider.Config) (*anthropic.Model, error) {
	cfg = cfg.Clone()
	if cfg.Kind == "" {
		cfg.Kind = provider.KindBedrock
	}
	if cfg.Provider == "" {
		cfg.Provider = "bedrock"
	}
	if cfg.Kind != provider.KindBedrock {
		return nil, fmt.Errorf("bedrock: config is for kind %s", cfg.Kind)
	}
	return anthropic.NewOn(cfg, &platform{cfg: cfg})
}

// DecodeAnswer returns what the adapter makes of a recorded InvokeModel
// answer, a JSON body or a binary event stream, through the same SDK
// client and conversion code as a live call (see anthropic.DecodeAnswer).
func DecodeAnswer(ctx context.Context, a provider.RecordedAnswer) (*llm.Response, error) {
	m, err := New(provider.DecodeConfig(provider.KindBedrock, a))
	if err != nil {
		return nil, err
	}
	return anthropic.DecodeAnswerWith(ctx, m, a)
}

type platform struct{ cfg provider.Config }

// ClientOptions implements anthropic.Platform.
func (p *platform) ClientOptions(ctx context.Context) ([]option.RequestOption, error) {
	ac, err := p.awsConfig(ctx)
	if err != nil {
		return nil, err
	}
	return []option.RequestOption{sdkbedrock.WithConfig(ac), option.WithJSONSet("anthropic_version", AnthropicVersion)}, nil
}

// awsConfig resolves the region and the credentials calls are made with.
func (p *platform) awsConfig(ctx context.Context) (aws.Config, error) {
	c := p.cfg
	region := c.Region
	if region == "" {
		region, _ = c.FirstEnv(RegionEnv...)
	}
	if c.Replay {
		if region == "" {
			region = replayRegion
		}
		// A fixed key, so that signing runs as it does live and no
		// credential is looked up; nothing replayed is sent anywhere.
		return aws.Config{Region: region, Credentials: static(aws.Credentials{AccessKeyID: "REPLAYKEYID", SecretAccessKey: "replay", Source: "dageval replay"})}, nil
	}
	key, err := c.Key()
	if err != nil {
		return aws.Config{}, err
	}
	ac := aws.Config{Region: region}
	switch id, secret := c.Env("AWS_ACCESS_KEY_ID"), c.Env("AWS_SECRET_ACCESS_KEY"); {
	case key != "":
		ac.BearerAuthTokenProvider = sdkbedrock.NewStaticBearerTokenProvider(key)
		ac.AuthSchemePreference = []string{"httpBearerAuth"}
	case id != "" && secret != "":
		// The chain's first source, read through the config's getenv so
		// that tests stay hermetic.
		ac.Credentials = static(aws.Credentials{AccessKeyID: id, SecretAccessKey: secret, SessionToken: c.Env("AWS_SESSION_TOKEN"), Source: "environment"})
	default:
		var opts []func(*config.LoadOptions) error
		if region != "" {
			opts = append(opts, config.WithRegion(region))
		}
		if profile := c.Env("AWS_PROFILE"); profile != "" {
			opts = append(opts, config.WithSharedConfigProfile(profile))
		}
		loaded, err := config.LoadDefaultConfig(ctx, opts...)
		if err != nil {
			return aws.Config{}, p.authError(fmt.Errorf("loading the AWS configuration: %w", err))
		}
		if loaded.Credentials == nil {
			return aws.Config{}, p.authError(errors.New("the AWS default credential chain found no credentials; set AWS_PROFILE, AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_BEARER_TOKEN_BEDROCK"))
		}
		ac.Region = loaded.Region
		ac.Credentials = &classified{p: p, next: loaded.Credentials}
	}
	if ac.Region == "" {
		return aws.Config{}, p.authError(fmt.Errorf("no AWS region for %s: set AWS_REGION, or region: in the provider entry", c.Identity()))
	}
	return ac, nil
}

func (p *platform) authError(err error) *llm.Error {
	return &llm.Error{Kind: llm.ErrAuthentication, Provider: p.cfg.Provider, Message: p.cfg.Scrub(err.Error()), Err: err}
}

func static(c aws.Credentials) aws.CredentialsProvider {
	return aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) { return c, nil })
}

// classified turns a failure of the default chain (an expired SSO session,
// no instance role) into an authentication error, which is what it is;
// unwrapped it would read as an undecodable answer.
type classified struct {
	p    *platform
	next aws.CredentialsProvider // a cache, safe for concurrent use
}

func (c *classified) Retrieve(ctx context.Context) (aws.Credentials, error) {
	creds, err := c.next.Retrieve(ctx)
	if err != nil {
		return creds, c.p.authError(fmt.Errorf("AWS credentials: %w", err))
	}
	return creds, nil
}

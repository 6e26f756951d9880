package gocli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/dageval/dageval/evals"
	"github.com/dageval/dageval/harness"
	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/agentfile"
	"github.com/dageval/dageval/harness/provider"
	"github.com/dageval/dageval/harness/tool"
	"github.com/dageval/dageval/rubrics"
)

// Prompt is the support agent's own system prompt.
const Prompt = "You are the support agent of an online shop. Look an order up with lookup_order before you say anything about it, and answer in one or two sentences."

// Model is the model the agent runs on unless told otherwise: the
// company's gateway (Gateway) serving its own support model.
const Model = "corp:support-large"

// Gateway is the company's OpenAI-compatible model gateway, registered as
// provider "corp" so that specs like corp:support-large reach it.
var Gateway = provider.Entry{Kind: provider.KindOpenAICompatible, BaseURL: "https://llm.corp.example/v1", APIKeyEnv: "CORP_LLM_KEY"}

// Agent builds the support agent, the way the team's service builds it:
// a deep agent with its typed tool and its refund-policy middleware.
func Agent(_ context.Context, req evals.AgentRequest) (harness.Config, error) {
	policy, err := NewPolicy(PolicyOptions{RefundDays: 30})
	if err != nil {
		return harness.Config{}, err
	}
	return harness.Config{
		Name:         "support",
		ModelSpec:    cmp.Or(req.Model, Model),
		SystemPrompt: Prompt,
		Tools:        []tool.Tool{LookupOrder},
		Middleware:   []agent.Middleware{policy},
	}, nil
}

type orderArgs struct {
	OrderID string `json:"order_id" jsonschema:"the order's id, e.g. A-1001"`
}

// orders is the shop's order book, as the real tool would read it.
var orders = map[string]string{
	"A-1001": "shipped on 2025-12-29, arriving 2026-01-02",
	"A-1002": "delayed: the parcel is held at customs",
	"A-1003": "delivered on 2025-12-20",
}

// LookupOrder is the agent's typed tool: its JSON Schema comes from orderArgs.
var LookupOrder = tool.Must(tool.New("lookup_order", "Looks an order up by its id and says where it is.",
	func(_ context.Context, a orderArgs) (string, error) {
		s, ok := orders[a.OrderID]
		if !ok {
			return "", fmt.Errorf("no order %q", a.OrderID)
		}
		return "order " + a.OrderID + ": " + s, nil
	}))

// PolicyOptions are PolicyMiddleware's options; an agent file gives them
// as middleware: [{name: PolicyMiddleware, options: {refund_days: 30}}].
type PolicyOptions struct {
	RefundDays int `yaml:"refund_days"`
}

// Validate is called when an agent file naming the middleware is read.
func (o PolicyOptions) Validate() error {
	if o.RefundDays <= 0 {
		return errors.New("refund_days must be positive")
	}
	return nil
}

// PolicyMiddleware tells the model the shop's refund policy on every call,
// so that the policy lives in one place of the code.
type PolicyMiddleware struct {
	agent.Base
	days int
}

// NewPolicy is PolicyMiddleware's constructor.
func NewPolicy(o PolicyOptions) (agent.Middleware, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	return &PolicyMiddleware{days: o.RefundDays}, nil
}

// Name implements agent.Middleware.
func (*PolicyMiddleware) Name() string { return "PolicyMiddleware" }

// WrapModelCall adds the policy to the system prompt.
func (m *PolicyMiddleware) WrapModelCall(ctx context.Context, req *agent.ModelRequest, next agent.ModelHandler) (*agent.ModelResponse, error) {
	req.System = agent.AppendSystemText(req.System, fmt.Sprintf("Refund policy: items can be returned within %d days of delivery. Never promise more.", m.days))
	return next(ctx, req)
}

// MentionsOrderOptions say what a good answer names.
type MentionsOrderOptions struct {
	Order  string `yaml:"order"`
	Status string `yaml:"status"`
}

// MentionsOrder is the team's Go check: the answer names the order and its
// status, half the score each.
func MentionsOrder(_ context.Context, o MentionsOrderOptions, run *rubrics.Record) rubrics.CheckVerdict {
	answer := run.FinalAnswer()
	var missing []string
	score := 0.0
	for _, want := range []string{o.Order, o.Status} {
		if strings.Contains(answer, want) {
			score += 0.5
		} else {
			missing = append(missing, want)
		}
	}
	v := rubrics.CheckVerdict{Passed: len(missing) == 0, Score: score}
	if len(missing) > 0 {
		v.Detail = fmt.Sprintf("the answer %q does not mention %s", answer, strings.Join(missing, " or "))
	}
	return v
}

// Registry holds the same registrations as cmd/evals, for go test and the
// record command.
func Registry() *evals.Registry {
	return evals.NewRegistry().
		AddAgent("support", Agent).
		AddTool("lookup_order", LookupOrder).
		AddMiddleware("PolicyMiddleware", agentfile.NewMiddleware(NewPolicy)).
		AddCheck("mentions_order", evals.NewCheck(MentionsOrder)).
		AddProvider("corp", Gateway)
}

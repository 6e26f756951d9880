package gocli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/dageval/dageval/evals"
	"github.com/dageval/dageval/evals/examples/internal/recording"
	"github.com/dageval/dageval/harness/llm"
)

// ScriptedModel plays the support model the cassettes were recorded
// against: it looks the order in the question up, then answers from the
// tool's result, and from the refund policy its system prompt states.
func ScriptedModel() llm.ChatModel { return scripted{} }

type scripted struct{}

var (
	orderID    = regexp.MustCompile(`[A-Z]-\d{4}`)
	refundDays = regexp.MustCompile(`within (\d+) days`)
)

func (scripted) Generate(_ context.Context, req *llm.Request) (*llm.Response, error) {
	var question, result string
	for _, m := range req.Messages {
		switch {
		case m.Role == llm.RoleUser && question == "":
			question = m.Text()
		case m.Role == llm.RoleTool:
			result = m.Text()
		}
	}
	id := orderID.FindString(question)
	if id == "" {
		return nil, fmt.Errorf("scripted support model: no order id in %q", question)
	}
	if result == "" {
		args, _ := json.Marshal(map[string]string{"order_id": id})
		return &llm.Response{Message: llm.Assistant("", llm.ToolCall{Name: "lookup_order", Args: args})}, nil
	}
	status := strings.TrimPrefix(result, "order "+id+": ")
	answer := fmt.Sprintf("Order %s is %s.", id, status)
	if strings.Contains(question, "return") {
		days := "the policy's"
		if m := refundDays.FindStringSubmatch(llm.BlocksText(req.System)); m != nil {
			days = m[1]
		}
		answer = fmt.Sprintf("Order %s was %s, so yes: returns are accepted within %s days of delivery.", id, status, days)
	}
	return &llm.Response{Message: llm.Assistant(answer)}, nil
}

// Record re-records the suite's cassettes against a local server playing
// ScriptedModel, with the registrations of Registry (see
// recording.Recording.Run).
func Record(ctx context.Context, suitePath string, progress io.Writer) (*evals.RunResult, error) {
	return recording.Recording{Suite: suitePath, Load: Registry().Load, Model: ScriptedModel(), KeyEnvs: []string{Gateway.APIKeyEnv}}.Run(ctx, progress)
}

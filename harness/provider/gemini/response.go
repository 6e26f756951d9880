package gemini

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strconv"
	"strings"

	"google.golang.org/genai"

	"github.com/dageval/dageval/harness/llm"
)

// result is one Gemini answer, whole or accumulated from a stream's
// chunks; both paths end in response, so they give equal results.
type result struct {
	responseID, model string
	parts             []*genai.Part
	callIDs           []string // ids of the function-call parts, in order
	finish            genai.FinishReason
	blocked           genai.BlockedReason
	usage             *genai.GenerateContentResponseUsageMetadata
	candidate         bool
}

// add folds one answer or stream chunk into the result and returns the
// parts it brought.
func (r *result) add(resp *genai.GenerateContentResponse) []*genai.Part {
	if resp == nil {
		return nil
	}
	if resp.ResponseID != "" {
		r.responseID = resp.ResponseID
	}
	if resp.ModelVersion != "" {
		r.model = resp.ModelVersion
	}
	if resp.UsageMetadata != nil {
		r.usage = resp.UsageMetadata // cumulative: the last one counts
	}
	if pf := resp.PromptFeedback; pf != nil && pf.BlockReason != "" {
		r.blocked = pf.BlockReason
	}
	if len(resp.Candidates) == 0 || resp.Candidates[0] == nil {
		return nil
	}
	c := resp.Candidates[0]
	r.candidate = true
	if c.FinishReason != "" {
		r.finish = c.FinishReason
	}
	if c.Content == nil {
		return nil
	}
	var added []*genai.Part
	for _, p := range c.Content.Parts {
		if p != nil {
			r.parts = append(r.parts, p)
			added = append(added, p)
		}
	}
	return added
}

// addChunk folds a stream chunk in and returns its deltas: text and
// thinking as they come, each function call whole.
func (r *result) addChunk(resp *genai.GenerateContentResponse, nMessages int) []llm.Chunk {
	var out []llm.Chunk
	for _, p := range r.add(resp) {
		switch {
		case p.FunctionCall != nil:
			n := len(r.callIDs)
			id := r.callID(p.FunctionCall, nMessages, n)
			r.callIDs = append(r.callIDs, id)
			out = append(out, llm.Chunk{ToolCallDelta: &llm.ToolCallDelta{Index: n, ID: id, Name: p.FunctionCall.Name, ArgsDelta: string(argsJSON(p.FunctionCall.Args))}})
		case p.Thought && p.Text != "":
			out = append(out, llm.Chunk{ThinkingDelta: p.Text})
		case p.Text != "":
			out = append(out, llm.Chunk{TextDelta: p.Text})
		}
	}
	return out
}

// finished reports whether the answer came to an end: a finish reason, or
// a prompt Gemini refused to answer.
func (r *result) finished() bool { return r.finish != "" || r.blocked != "" }

// callID is the call's own id, or one derived from the answer and the
// conversation length, so a replayed run gets the same ids and identical
// calls in different turns get different ones.
func (r *result) callID(fc *genai.FunctionCall, nMessages, index int) string {
	if fc.ID != "" {
		return fc.ID
	}
	h := sha256.New()
	for _, part := range []string{r.responseID, strconv.Itoa(nMessages), strconv.Itoa(index), fc.Name, string(argsJSON(fc.Args))} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	return syntheticIDPrefix + hex.EncodeToString(h.Sum(nil))[:24]
}

// textRun is consecutive text parts of one kind (thought or answer),
// joined as a stream delivers one text in several parts.
type textRun struct {
	thought bool
	text    strings.Builder
	sig     []byte
}

// response builds the provider-neutral answer. nMessages (the request's
// message count) makes derived tool-call ids unique across turns.
func (r *result) response(nMessages int) (*llm.Response, error) {
	if !r.candidate && r.blocked == "" {
		return nil, errors.New("the answer has no candidates")
	}
	out := llm.Message{Role: llm.RoleAssistant}
	var runs []*textRun
	var calls []*genai.FunctionCall
	var callSigs [][]byte
	for _, p := range r.parts {
		switch {
		case p.FunctionCall != nil:
			calls = append(calls, p.FunctionCall)
			callSigs = append(callSigs, p.ThoughtSignature)
		case p.InlineData != nil, p.FileData != nil, p.ExecutableCode != nil, p.CodeExecutionResult != nil,
			p.FunctionResponse != nil, p.ToolCall != nil, p.ToolResponse != nil:
			// Generated media and server-side tool traffic have no
			// provider-neutral form yet.
		default:
			var last *textRun
			if n := len(runs); n > 0 {
				last = runs[n-1]
			}
			if last == nil || last.thought != p.Thought || (len(last.sig) > 0 && len(p.ThoughtSignature) > 0) {
				last = &textRun{thought: p.Thought}
				runs = append(runs, last)
			}
			last.text.WriteString(p.Text)
			if len(p.ThoughtSignature) > 0 {
				last.sig = p.ThoughtSignature
			}
		}
	}
	for _, run := range runs {
		sig := ""
		if len(run.sig) > 0 {
			sig = messageSig + base64.StdEncoding.EncodeToString(run.sig)
		}
		text := run.text.String()
		switch {
		case run.thought:
			out.Content = append(out.Content, llm.Block{Type: llm.BlockThinking, Thinking: text, Signature: sig})
		default:
			if sig != "" {
				out.Content = append(out.Content, llm.Block{Type: llm.BlockThinking, Signature: sig})
			}
			if text != "" {
				out.Content = append(out.Content, llm.TextBlock(text))
			}
		}
	}
	for i, fc := range calls {
		id := ""
		if i < len(r.callIDs) {
			id = r.callIDs[i]
		} else {
			id = r.callID(fc, nMessages, i)
		}
		if len(callSigs[i]) > 0 {
			out.Content = append(out.Content, llm.Block{Type: llm.BlockThinking, Signature: callSig + id + ":" + base64.StdEncoding.EncodeToString(callSigs[i])})
		}
		out.ToolCalls = append(out.ToolCalls, llm.ToolCall{ID: id, Name: fc.Name, Args: argsJSON(fc.Args)})
	}
	usage := usageOf(r.usage)
	u := usage
	out.Usage = &u
	return &llm.Response{Message: out, StopReason: r.stopReason(len(out.ToolCalls) > 0), Usage: usage, Model: r.model}, nil
}

// argsJSON encodes call arguments; no arguments are an empty object.
func argsJSON(args map[string]any) json.RawMessage {
	if len(args) == 0 {
		return json.RawMessage("{}")
	}
	b, err := json.Marshal(args)
	if err != nil {
		return json.RawMessage("{}")
	}
	return b
}

// usageOf splits Gemini's counts the provider-neutral way: the prompt
// count includes cached tokens, which become cache reads; thinking tokens
// are billed as output; the prompt of server-side tool use is input.
func usageOf(u *genai.GenerateContentResponseUsageMetadata) llm.Usage {
	if u == nil {
		return llm.Usage{}
	}
	cached := int(u.CachedContentTokenCount)
	return llm.Usage{
		InputTokens:     max(int(u.PromptTokenCount)-cached, 0) + int(u.ToolUsePromptTokenCount),
		OutputTokens:    int(u.CandidatesTokenCount) + int(u.ThoughtsTokenCount),
		CacheReadTokens: cached,
	}
}

func (r *result) stopReason(calls bool) llm.StopReason {
	if r.blocked != "" && !r.candidate {
		return llm.StopContentFilter
	}
	switch r.finish {
	case genai.FinishReasonStop, "", genai.FinishReasonUnspecified:
		// Gemini says STOP when it calls functions too.
		if calls {
			return llm.StopToolUse
		}
		return llm.StopEndTurn
	case genai.FinishReasonMaxTokens:
		return llm.StopMaxTokens
	case genai.FinishReasonSafety, genai.FinishReasonRecitation, genai.FinishReasonBlocklist,
		genai.FinishReasonProhibitedContent, genai.FinishReasonSPII, genai.FinishReasonImageSafety,
		genai.FinishReasonImageProhibitedContent, genai.FinishReasonImageRecitation:
		return llm.StopContentFilter
	}
	if calls {
		return llm.StopToolUse
	}
	return llm.StopReason(strings.ToLower(string(r.finish)))
}

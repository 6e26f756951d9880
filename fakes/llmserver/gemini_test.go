package llmserver_test

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/fakes"
	"github.com/dageval/dageval/fakes/cassette"
	"github.com/dageval/dageval/fakes/internal/posttest"
	"github.com/dageval/dageval/fakes/llmserver"
	"github.com/dageval/dageval/harness/llm"
)

const geminiPath = "/v1beta/models/gemini-2.5-flash"

// accumulateGemini joins a stream's chunks the way a client does: parts in
// order, consecutive text parts of one kind joined, the last finish reason
// and usage.
func accumulateGemini(t *testing.T, chunks []map[string]any) map[string]any {
	t.Helper()
	var parts []any
	var finish, usage any
	for _, c := range chunks {
		cand := c["candidates"].([]any)[0].(map[string]any)
		for _, p := range cand["content"].(map[string]any)["parts"].([]any) {
			pm := maps.Clone(p.(map[string]any)) // the chunks stay as sent
			if n := len(parts); n > 0 {
				last := parts[n-1].(map[string]any)
				if _, isText := pm["text"]; isText && last["text"] != nil && last["thought"] == pm["thought"] && last["thoughtSignature"] == nil {
					last["text"] = last["text"].(string) + pm["text"].(string)
					if sig, ok := pm["thoughtSignature"]; ok {
						last["thoughtSignature"] = sig
					}
					continue
				}
			}
			if pm["text"] == "" && pm["thoughtSignature"] == nil {
				continue // the empty closing part
			}
			parts = append(parts, pm)
		}
		if f, ok := cand["finishReason"]; ok {
			finish = f
		}
		if u, ok := c["usageMetadata"]; ok {
			usage = u
		}
	}
	return map[string]any{"parts": parts, "finishReason": finish, "usageMetadata": usage}
}

func geminiSignedAnswer() fakes.Step {
	return fakes.Respond(llm.Response{
		Message: llm.Message{Role: llm.RoleAssistant,
			Content: []llm.Block{{Type: llm.BlockThinking, Thinking: "Two cities, two calls.", Signature: "gemini:c2lnLXRob3VnaHQ="}, llm.TextBlock("Checking both cities.")},
			ToolCalls: []llm.ToolCall{
				fakes.Call("get_weather", map[string]string{"city": "Paris"}),
				fakes.Call("get_weather", map[string]string{"city": "Tokyo"}),
			}},
		Usage: llm.Usage{InputTokens: 120, OutputTokens: 45, CacheReadTokens: 30},
	})
}

func TestGeminiServerStreamsWhatItAnswers(t *testing.T) {
	body := `{"contents":[{"role":"user","parts":[{"text":"Weather in Paris and Tokyo?"}]}],"tools":[{"functionDeclarations":[{"name":"get_weather","parametersJsonSchema":{"type":"object"}}]}]}`
	serve := func() *llmserver.Server { return llmserver.NewServer(fakes.NewScripted(geminiSignedAnswer())) }
	plainSrv, sseSrv, arraySrv := serve(), serve(), serve()
	defer plainSrv.Close()
	defer sseSrv.Close()
	defer arraySrv.Close()

	plain := posttest.MustPost(t, context.Background(), http.DefaultClient, plainSrv.URL+geminiPath+":generateContent", body, posttest.GeminiHeaders("k")...)
	require.Equal(t, 200, plain.Status, plain.Body)
	assert.Equal(t, "application/json", plain.Header.Get("Content-Type"))
	whole := decodeJSON(t, plain.Body)
	assert.Equal(t, "gemini-2.5-flash", whole["modelVersion"], "the model in the path is echoed")
	assert.Regexp(t, `^[0-9A-Za-z]{22}$`, whole["responseId"])
	assert.Equal(t, map[string]any{"promptTokenCount": 150.0, "candidatesTokenCount": 45.0, "totalTokenCount": 195.0, "cachedContentTokenCount": 30.0,
		"promptTokensDetails": []any{map[string]any{"modality": "TEXT", "tokenCount": 150.0}}}, whole["usageMetadata"])
	cand := whole["candidates"].([]any)[0].(map[string]any)
	assert.Equal(t, "STOP", cand["finishReason"], "Gemini says STOP when it calls functions")
	parts := cand["content"].(map[string]any)["parts"].([]any)
	require.Len(t, parts, 4)
	assert.Equal(t, map[string]any{"text": "Two cities, two calls.", "thought": true, "thoughtSignature": "c2lnLXRob3VnaHQ="}, parts[0])
	assert.Equal(t, map[string]any{"text": "Checking both cities."}, parts[1])
	first := parts[2].(map[string]any)
	assert.Equal(t, map[string]any{"name": "get_weather", "args": map[string]any{"city": "Paris"}}, first["functionCall"], "calls go out without ids")
	assert.NotEmpty(t, first["thoughtSignature"], "the first call of a step is signed")
	assert.Nil(t, parts[3].(map[string]any)["thoughtSignature"])

	stream := posttest.MustPost(t, context.Background(), http.DefaultClient, sseSrv.URL+geminiPath+":streamGenerateContent?alt=sse", body, posttest.GeminiHeaders("k")...)
	require.Equal(t, 200, stream.Status, stream.Body)
	assert.Equal(t, "text/event-stream; charset=utf-8", stream.Header.Get("Content-Type"))
	var chunks []map[string]any
	for _, ev := range parseSSE(t, stream.Body) {
		assert.Empty(t, ev.event, "Gemini's events have data only")
		chunks = append(chunks, decodeJSON(t, ev.data))
	}
	require.Greater(t, len(chunks), 4, "text arrives in pieces")
	got := accumulateGemini(t, chunks)
	assert.Equal(t, parts, got["parts"])
	assert.Equal(t, "STOP", got["finishReason"])
	assert.Equal(t, whole["usageMetadata"], got["usageMetadata"])
	assert.True(t, sseSrv.Requests()[0].Stream)
	assert.Equal(t, "gemini-2.5-flash", sseSrv.Requests()[0].Model)

	array := posttest.MustPost(t, context.Background(), http.DefaultClient, arraySrv.URL+geminiPath+":streamGenerateContent", body, posttest.GeminiHeaders("k")...)
	require.Equal(t, 200, array.Status, array.Body)
	assert.Equal(t, "application/json", array.Header.Get("Content-Type"))
	var arrayChunks []map[string]any
	require.NoError(t, json.Unmarshal([]byte(array.Body), &arrayChunks), "without alt=sse a stream is one JSON array")
	assert.Equal(t, chunks, arrayChunks)
}

func TestGeminiServerDecodesRequests(t *testing.T) {
	m := fakes.NewScripted(fakes.Reply("ok"))
	srv := llmserver.NewServer(m)
	defer srv.Close()
	body := `{
	  "systemInstruction": {"role": "user", "parts": [{"text": "You are terse."}]},
	  "generationConfig": {"maxOutputTokens": 2048, "temperature": 0.2, "stopSequences": ["END"], "seed": 7,
	    "thinkingConfig": {"includeThoughts": true, "thinkingBudget": 1024},
	    "responseMimeType": "application/json", "responseJsonSchema": {"type": "object", "properties": {"answer": {"type": "string"}}}},
	  "toolConfig": {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["get_weather"]}},
	  "tools": [{"functionDeclarations": [{"name": "get_weather", "description": "Weather now.", "parametersJsonSchema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}, {"name": "now"}]}],
	  "contents": [
	    {"role": "user", "parts": [{"text": "Paris and Rome?"}, {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}}]},
	    {"role": "model", "parts": [{"text": "hm", "thought": true, "thoughtSignature": "dGg="}, {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}}, {"functionCall": {"id": "c2", "name": "get_weather", "args": {"city": "Rome"}}}]},
	    {"role": "user", "parts": [{"functionResponse": {"id": "c2", "name": "get_weather", "response": {"output": "rain"}}}, {"functionResponse": {"name": "get_weather", "response": {"error": "no station"}}}]},
	    {"role": "user", "parts": [{"text": "Thanks."}]}
	  ]
	}`
	r := posttest.MustPost(t, context.Background(), http.DefaultClient, srv.URL+geminiPath+":generateContent?key=k", body)
	require.Equal(t, 200, r.Status, r.Body)
	got := srv.Requests()[0]
	assert.Equal(t, cassette.APIGemini, got.API)
	assert.Equal(t, "gemini-2.5-flash", got.Model)
	temp, seed := 0.2, int64(7)
	want := &llm.Request{
		System: []llm.Block{llm.TextBlock("You are terse.")},
		Messages: []llm.Message{
			{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("Paris and Rome?"), {Type: llm.BlockImage, MediaType: "image/png", Data: "iVBORw0KGgo="}}},
			{Role: llm.RoleAssistant, Content: []llm.Block{{Type: llm.BlockThinking, Thinking: "hm", Signature: "gemini:dGg="}},
				ToolCalls: []llm.ToolCall{{ID: "fc_1_0", Name: "get_weather", Args: json.RawMessage(`{"city":"Paris"}`)}, {ID: "c2", Name: "get_weather", Args: json.RawMessage(`{"city":"Rome"}`)}}},
			{Role: llm.RoleTool, ToolCallID: "c2", Name: "get_weather", Content: []llm.Block{llm.TextBlock("rain")}},
			{Role: llm.RoleTool, ToolCallID: "fc_1_0", Name: "get_weather", IsError: true, Content: []llm.Block{llm.TextBlock("no station")}},
			{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("Thanks.")}},
		},
		Tools: []llm.ToolSpec{
			{Name: "get_weather", Description: "Weather now.", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)},
			{Name: "now", Parameters: json.RawMessage(`{"type":"object","properties":{}}`)},
		},
		ToolChoice:     &llm.ToolChoice{Mode: llm.ToolChoiceTool, Name: "get_weather"},
		ResponseFormat: &llm.ResponseFormat{Name: "response", Schema: json.RawMessage(`{"type":"object","properties":{"answer":{"type":"string"}}}`)},
		MaxTokens:      2048, Temperature: &temp, Seed: &seed, StopSequences: []string{"END"},
		Thinking: &llm.Thinking{BudgetTokens: 1024},
	}
	assert.Equal(t, want, got.Request)
	assert.Equal(t, *want, m.Requests()[0], "the model sees the decoded request")
}

func TestGeminiServerRejectsWireMistakes(t *testing.T) {
	const user = `{"role":"user","parts":[{"text":"x"}]}`
	const call = `{"role":"model","parts":[{"functionCall":{"name":"f","args":{}}}]}`
	tests := []errorCase{
		{"no key", `{}`, []string{"Content-Type", "application/json"}, 403, "Method doesn't allow unregistered callers"},
		{"unknown field", `{"contents":[` + user + `],"generation_config":{}}`, nil, 400, `request body: unknown field "generation_config"`},
		{"no contents", `{"contents":[]}`, nil, 400, "contents is not specified"},
		{"empty parts", `{"contents":[{"role":"user","parts":[]}]}`, nil, 400, "contents.parts must not be empty"},
		{"part without data", `{"contents":[{"role":"user","parts":[{"thoughtSignature":"c2ln"}]}]}`, nil, 400, "required oneof field 'data' must have one initialized field"},
		{"part with two data fields", `{"contents":[{"role":"user","parts":[{"text":"x","inlineData":{"mimeType":"image/png","data":"AA=="}}]}]}`, nil, 400, "oneof field 'data' is already set"},
		{"bad role", `{"contents":[{"role":"system","parts":[{"text":"x"}]}]}`, nil, 400, "Please use a valid role: user, model."},
		{"call without response", `{"contents":[` + user + `,` + call + `,` + user + `]}`, nil, 400, "the number of function response parts is equal to the number of function call parts"},
		{"response without call", `{"contents":[{"role":"user","parts":[{"functionResponse":{"name":"f","response":{"output":"r"}}}]}]}`, nil, 400, "the number of function response parts is equal to the number of function call parts"},
		{"response to another function", `{"contents":[` + user + `,` + call + `,{"role":"user","parts":[{"functionResponse":{"name":"g","response":{}}}]}]}`, nil, 400, `function response name "g" does not match the function call "f"`},
		{"response not an object", `{"contents":[` + user + `,` + call + `,{"role":"user","parts":[{"functionResponse":{"name":"f","response":"r"}}]}]}`, nil, 400, "function_response.response: expected an object"},
		{"bad function name", `{"contents":[` + user + `],"tools":[{"functionDeclarations":[{"name":"9lives"}]}]}`, nil, 400, "Invalid function name"},
		{"both parameter forms", `{"contents":[` + user + `],"tools":[{"functionDeclarations":[{"name":"f","parameters":{"type":"OBJECT"},"parametersJsonSchema":{"type":"object"}}]}]}`, nil, 400, "mutually exclusive"},
		{"allowed name not declared", `{"contents":[` + user + `],"toolConfig":{"functionCallingConfig":{"mode":"ANY","allowedFunctionNames":["g"]}}}`, nil, 400, `"g" is not a declared function`},
		{"schema without json mime type", `{"contents":[` + user + `],"generationConfig":{"responseJsonSchema":{"type":"object"}}}`, nil, 400, "needs response_mime_type application/json"},
		{"not JSON", `{"contents":`, nil, 400, "request body: invalid JSON"},
	}
	srv := llmserver.NewServer(fakes.NewScripted())
	defer srv.Close()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hdr := tt.header
			if hdr == nil {
				hdr = posttest.GeminiHeaders("k")
			}
			r := posttest.MustPost(t, context.Background(), http.DefaultClient, srv.URL+geminiPath+":generateContent", tt.body, hdr...)
			assert.Equal(t, tt.status, r.Status, r.Body)
			e := decodeJSON(t, r.Body)["error"].(map[string]any)
			assert.Contains(t, e["message"], tt.msg)
			assert.Equal(t, float64(tt.status), e["code"])
			want := "INVALID_ARGUMENT"
			if tt.status == 403 {
				want = "PERMISSION_DENIED"
			}
			assert.Equal(t, want, e["status"])
		})
	}
}

func TestGeminiServerAuth(t *testing.T) {
	srv := llmserver.NewServer(fakes.NewRuleModel(fakes.Rule{Reply: func(*llm.Request) (*llm.Response, error) {
		return &llm.Response{Message: llm.Assistant("ok")}, nil
	}}), llmserver.WithAPIKey("right-key"))
	defer srv.Close()
	body := `{"contents":[{"role":"user","parts":[{"text":"x"}]}]}`
	r := posttest.MustPost(t, context.Background(), http.DefaultClient, srv.URL+geminiPath+":generateContent", body, posttest.GeminiHeaders("right-key")...)
	assert.Equal(t, 200, r.Status, r.Body)
	r = posttest.MustPost(t, context.Background(), http.DefaultClient, srv.URL+geminiPath+":generateContent?key=right-key", body)
	assert.Equal(t, 200, r.Status, r.Body)
	r = posttest.MustPost(t, context.Background(), http.DefaultClient, srv.URL+geminiPath+":generateContent", body, posttest.GeminiHeaders("wrong")...)
	assert.Equal(t, 400, r.Status, "Gemini answers a wrong key with a 400")
	e := decodeJSON(t, r.Body)["error"].(map[string]any)
	assert.Equal(t, "API key not valid. Please pass a valid API key.", e["message"])
	assert.Equal(t, []any{map[string]any{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID", "domain": "googleapis.com"}}, e["details"])
	for _, sr := range srv.Requests() {
		assert.NotContains(t, sr.Header.Get("X-Goog-Api-Key"), "right-key", "served requests keep no credentials")
	}
}

// TestGeminiServerChecksThoughtSignatures: for Gemini 3 the server, like
// Gemini, refuses a current turn whose function call lost the signature it
// was given, or carries another call's, and accepts it sent back.
func TestGeminiServerChecksThoughtSignatures(t *testing.T) {
	srv := llmserver.NewServer(fakes.NewScripted(fakes.Calls("", fakes.Call("f", map[string]int{"n": 1})), fakes.Reply("done"), fakes.Reply("done"), fakes.Reply("done"), fakes.Reply("done")))
	defer srv.Close()
	const tools = `,"tools":[{"functionDeclarations":[{"name":"f"}]}]`
	first := posttest.MustPost(t, context.Background(), http.DefaultClient, srv.URL+"/v1beta/models/gemini-3-flash-preview:generateContent", `{"contents":[{"role":"user","parts":[{"text":"go"}]}]`+tools+`}`, posttest.GeminiHeaders("k")...)
	require.Equal(t, 200, first.Status, first.Body)
	part := decodeJSON(t, first.Body)["candidates"].([]any)[0].(map[string]any)["content"].(map[string]any)["parts"].([]any)[0].(map[string]any)
	sig := part["thoughtSignature"].(string)
	history := func(model, signature string) string {
		p := `{"functionCall":{"name":"f","args":{"n":1}}`
		if signature != "" {
			p += `,"thoughtSignature":"` + signature + `"`
		}
		p += `}`
		return `{"contents":[{"role":"user","parts":[{"text":"go"}]},{"role":"model","parts":[` + p + `]},{"role":"user","parts":[{"functionResponse":{"name":"f","response":{"output":"1"}}}]}]` + tools + `}`
	}
	post := func(model, body string) posttest.Result {
		return posttest.MustPost(t, context.Background(), http.DefaultClient, srv.URL+"/v1beta/models/"+model+":generateContent", body, posttest.GeminiHeaders("k")...)
	}
	r := post("gemini-3-flash-preview", history("gemini-3-flash-preview", ""))
	assert.Equal(t, 400, r.Status)
	assert.Contains(t, r.Body, "Function call is missing a thought_signature in functionCall parts")
	r = post("gemini-3-flash-preview", history("gemini-3-flash-preview", "b3RoZXI="))
	assert.Equal(t, 400, r.Status)
	assert.Contains(t, r.Body, "Corrupted thought signature.")
	r = post("gemini-3-flash-preview", history("gemini-3-flash-preview", sig))
	assert.Equal(t, 200, r.Status, r.Body)
	r = post("gemini-3-flash-preview", history("gemini-3-flash-preview", "skip_thought_signature_validator"))
	assert.Equal(t, 200, r.Status, "Gemini's documented escape for histories from elsewhere")
	r = post("gemini-2.5-flash", history("gemini-2.5-flash", ""))
	assert.Equal(t, 200, r.Status, "Gemini 2.5 does not insist")
	assert.True(t, strings.Contains(r.Body, "done"))
}

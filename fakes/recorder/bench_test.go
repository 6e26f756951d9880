package recorder_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dageval/dageval/fakes"
	"github.com/dageval/dageval/fakes/cassette"
	"github.com/dageval/dageval/fakes/llmserver"
	"github.com/dageval/dageval/fakes/recorder"
)

// conversationTurns is the length of the benchmarked conversation.
const conversationTurns = 10

// buildConversation returns the request bodies of a 10-turn tool-using
// conversation shaped like a deep agent's: a long system prompt, eight tool
// schemas, and a history that grows by a tool call and its result per turn.
func buildConversation() []string {
	system := strings.Repeat("You are a careful research agent. Plan with write_todos, keep notes in files, and delegate with task when a subproblem is large. ", 50)
	var tools []map[string]any
	for i := range 8 {
		tools = append(tools, map[string]any{
			"name":        fmt.Sprintf("tool_%d", i),
			"description": strings.Repeat("Does one precise thing with its arguments. ", 6),
			"input_schema": map[string]any{"type": "object", "required": []string{"path"}, "properties": map[string]any{
				"path": map[string]any{"type": "string", "description": "absolute path"}, "limit": map[string]any{"type": "integer"},
			}},
		})
	}
	messages := []map[string]any{{"role": "user", "content": "Research the topic and write a report to /report.md."}}
	var bodies []string
	for turn := 1; turn <= conversationTurns; turn++ {
		b, _ := json.Marshal(map[string]any{"model": "claude-sonnet-4-5", "max_tokens": 4096, "system": system, "tools": tools, "messages": messages})
		bodies = append(bodies, string(b))
		id := fmt.Sprintf("call_%d_1", turn)
		messages = append(messages,
			map[string]any{"role": "assistant", "content": []map[string]any{
				{"type": "text", "text": fmt.Sprintf("Step %d: reading the next file.", turn)},
				{"type": "tool_use", "id": id, "name": "tool_1", "input": map[string]any{"path": fmt.Sprintf("/notes/%d.md", turn)}},
			}},
			map[string]any{"role": "user", "content": []map[string]any{
				{"type": "tool_result", "tool_use_id": id, "content": strings.Repeat(fmt.Sprintf("line %d of the notes. ", turn), 25)},
			}},
		)
	}
	return bodies
}

// recordConversation records the conversation against the local server.
func recordConversation(b *testing.B, bodies []string) string {
	b.Helper()
	var steps []fakes.Step
	for turn := 1; turn <= conversationTurns; turn++ {
		steps = append(steps, fakes.Calls(fmt.Sprintf("Step %d: reading the next file.", turn), fakes.Call("tool_1", map[string]string{"path": fmt.Sprintf("/notes/%d.md", turn)})))
	}
	srv := llmserver.NewServer(fakes.NewScripted(steps...))
	defer srv.Close()
	path := filepath.Join(b.TempDir(), "conversation.yaml")
	rec, err := recorder.New(path, recorder.WithMode(recorder.ModeRecord), recorder.WithGetenv(noEnv), recorder.WithRecordedHost("api.anthropic.com"))
	if err != nil {
		b.Fatal(err)
	}
	ctx := recorder.WithLane(context.Background(), "main")
	for _, body := range bodies {
		if err := send(ctx, rec.Client(), srv.URL+"/v1/messages", body); err != nil {
			b.Fatal(err)
		}
	}
	if err := rec.Stop(); err != nil {
		b.Fatal(err)
	}
	return path
}

func send(ctx context.Context, c *http.Client, url, body string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Api-Key", "bench-key")
	req.Header.Set("Anthropic-Version", "2023-06-01")
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return nil
}

// reorder re-encodes a JSON body with sorted keys and indentation, so it no
// longer equals the recorded bytes and matching has to canonicalise.
func reorder(body string) string {
	var v any
	_ = json.Unmarshal([]byte(body), &v)
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", " ")
	_ = enc.Encode(v)
	return b.String()
}

// BenchmarkReplayConversation replays a recorded 10-turn conversation through
// a fresh Recorder per iteration (as a replayed run does) with a plain
// http.Client; the cassette is loaded and parsed every time.
func BenchmarkReplayConversation(b *testing.B) {
	bodies := buildConversation()
	path := recordConversation(b, bodies)
	reordered := make([]string, len(bodies))
	for i, body := range bodies {
		reordered[i] = reorder(body)
	}
	for _, bc := range []struct {
		name   string
		bodies []string
	}{
		{"same-bytes", bodies},
		{"canonicalised", reordered},
	} {
		b.Run(bc.name, func(b *testing.B) {
			ctx := recorder.WithLane(context.Background(), "main")
			b.ReportAllocs()
			for b.Loop() {
				rec, err := recorder.New(path, recorder.WithGetenv(noEnv))
				if err != nil {
					b.Fatal(err)
				}
				c := rec.Client()
				for _, body := range bc.bodies {
					if err := send(ctx, c, "https://api.anthropic.com/v1/messages", body); err != nil {
						b.Fatal(err)
					}
				}
				if err := rec.Stop(); err != nil {
					b.Fatal(err)
				}
			}
			sec := b.Elapsed().Seconds()
			b.ReportMetric(float64(b.N)/sec, "conversations/s")
			b.ReportMetric(float64(b.N*conversationTurns)/sec, "interactions/s")
		})
	}
}

// BenchmarkLoadConversationCassette is the first load of a cassette, which
// parses the YAML; later loads of the same bytes come from a cache.
func BenchmarkLoadConversationCassette(b *testing.B) {
	path := recordConversation(b, buildConversation())
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := cassette.Parse(path, data); err != nil {
			b.Fatal(err)
		}
	}
}

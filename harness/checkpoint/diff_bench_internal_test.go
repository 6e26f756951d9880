package checkpoint

import (
	"fmt"
	"testing"

	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/llm"
)

func BenchmarkDiffAppend(b *testing.B) {
	var states []*agent.State
	s := &agent.State{}
	for i := range 400 {
		n := *s
		n.Messages = append(append([]llm.Message(nil), s.Messages...), llm.Message{ID: fmt.Sprint("msg-", i), Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("x")}})
		states = append(states, &n)
		s = &n
	}
	for b.Loop() {
		for i := 1; i < len(states); i++ {
			if _, err := diff(states[i-1], states[i]); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*399), "ns/diff")
}

package agent_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/fakes"
	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/tool"
)

type meetArgs struct {
	Group int `json:"group"`
	Size  int `json:"size"`
}

// meetTool returns only once size calls of the same group are inside it at
// the same time: a turn's calls deadlock (and time out) unless they all run
// together.
func meetTool() tool.Tool {
	var mu sync.Mutex
	groups := map[int]chan struct{}{}
	arrived := map[int]int{}
	return tool.Must(tool.New("meet", "Waits for the other calls of its group.", func(ctx context.Context, a meetArgs) (string, error) {
		mu.Lock()
		ch, ok := groups[a.Group]
		if !ok {
			ch = make(chan struct{})
			groups[a.Group] = ch
		}
		arrived[a.Group]++
		if arrived[a.Group] == a.Size {
			close(ch)
		}
		mu.Unlock()
		select {
		case <-ch:
			return fmt.Sprintf("group %d met", a.Group), nil
		case <-time.After(5 * time.Second):
			return "", fmt.Errorf("group %d: the other calls never ran alongside this one", a.Group)
		}
	}))
}

// TestParallelCallsRunTogetherOnReusedWorkers checks that the calls of
// every turn run at the same time when the invocation's tool workers are
// reused across turns with more, fewer and again more calls, and that the
// workers end with the invocation.
func TestParallelCallsRunTogetherOnReusedWorkers(t *testing.T) {
	sizes := []int{2, 4, 1, 3, 5, 2}
	var steps []fakes.Step
	for g, n := range sizes {
		var calls []llm.ToolCall
		for range n {
			calls = append(calls, fakes.Call("meet", fmt.Sprintf(`{"group":%d,"size":%d}`, g, n)))
		}
		steps = append(steps, fakes.Calls("", calls...))
	}
	steps = append(steps, fakes.Reply("done"))
	a, err := agent.New(agent.Config{Model: fakes.NewScripted(steps...), Tools: []tool.Tool{meetTool()}, RecursionLimit: 100})
	require.NoError(t, err)
	res, err := a.Invoke(context.Background(), agent.Input{Messages: nil})
	require.NoError(t, err)
	total := 0
	for _, m := range res.State.Messages {
		if m.Role == "tool" {
			require.False(t, m.IsError, m.Text())
			total++
		}
	}
	want := 0
	for _, n := range sizes {
		want += n
	}
	require.Equal(t, want, total)
	require.Eventually(t, func() bool { return !strings.Contains(stacks(), "toolWorker") }, 5*time.Second, time.Millisecond,
		"the tool workers outlived the invocation")
}

// stacks dumps every goroutine's stack.
func stacks() string {
	b := make([]byte, 1<<20)
	return string(b[:runtime.Stack(b, true)])
}

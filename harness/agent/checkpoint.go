package agent

import (
	"context"
	"encoding/json"
	"sync"
)

// Phase is where in the loop a run stands.
type Phase string

// Loop phases.
const (
	PhaseBeforeAgent Phase = "before_agent"
	PhaseBeforeModel Phase = "before_model"
	PhaseModel       Phase = "model"
	PhaseAfterModel  Phase = "after_model"
	PhaseTools       Phase = "tools"
	PhaseAfterAgent  Phase = "after_agent"
	PhaseDone        Phase = "done"
)

// Position is the next thing a run will do.
type Position struct {
	Phase Phase `json:"phase"`
	// Index is the hook's position in execution order within the phase.
	Index int `json:"index,omitempty"`
}

// Checkpoint is what a thread needs to continue: its state, where the loop
// stands, and any interrupts waiting for an answer.
type Checkpoint struct {
	State      *State             `json:"state"`
	Next       Position           `json:"next"`
	Steps      int                `json:"steps"`
	Interrupts []PendingInterrupt `json:"interrupts,omitempty"`
	// ToolResults holds calls of an interrupted tool step that had already
	// finished, so resuming does not run them twice.
	ToolResults map[string]*ToolResponse `json:"tool_results,omitempty"`
	// Resumed keeps the answers already given to interrupts of the step in
	// progress, so a hook or tool that pauses again after a resume replays
	// its earlier answers in order.
	Resumed map[string]json.RawMessage `json:"resumed,omitempty"`
}

// Checkpointer saves and loads checkpoints by thread id.
type Checkpointer interface {
	// Get returns the latest checkpoint of the thread, or nil when there is none.
	Get(ctx context.Context, thread string) (*Checkpoint, error)
	// Put saves the latest checkpoint of the thread.
	Put(ctx context.Context, thread string, cp *Checkpoint) error
}

// MemoryCheckpointer keeps the latest checkpoint of each thread in memory.
// States are never modified in place by the runtime, so it stores pointers
// without copying.
type MemoryCheckpointer struct {
	mu      sync.Mutex
	threads map[string]*Checkpoint
}

// NewMemoryCheckpointer returns an empty in-memory checkpointer.
func NewMemoryCheckpointer() *MemoryCheckpointer {
	return &MemoryCheckpointer{threads: map[string]*Checkpoint{}}
}

// Get implements Checkpointer.
func (m *MemoryCheckpointer) Get(_ context.Context, thread string) (*Checkpoint, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	cp := m.threads[thread]
	if cp == nil {
		return nil, nil
	}
	c := *cp
	return &c, nil
}

// Put implements Checkpointer.
func (m *MemoryCheckpointer) Put(_ context.Context, thread string, cp *Checkpoint) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.threads == nil {
		m.threads = map[string]*Checkpoint{}
	}
	c := *cp
	m.threads[thread] = &c
	return nil
}

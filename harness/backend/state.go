package backend

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/dageval/dageval/harness/agent"
)

// ErrStateOutsideRun is returned by the State backend when it is used where
// there is no agent state to read: outside a tool call and without a
// StateStage.
var ErrStateOutsideRun = errors.New("backend: the State backend keeps files in agent state and works only inside a tool call of a running agent " +
	"(seed files through agent.Input.Files; model-call hooks use backend.WithStateStage)")

// State keeps files in the agent's state (agent.State.Files), so they are
// checkpointed with the thread and disappear with it. It reads through
// agent.ToolState (seeing the running tool's own writes) and records writes
// with agent.UpdateState; timestamps come from agent.Now, so replayed runs
// stamp files identically. The zero value is ready to use.
type State struct{}

// NewState returns a State backend.
func NewState() *State { return &State{} }

var stateOps = kvOps{table: stateTableFrom}

// Ls implements Backend.
func (*State) Ls(ctx context.Context, p string) ([]FileInfo, error) { return stateOps.Ls(ctx, p) }

// Read implements Backend.
func (*State) Read(ctx context.Context, p string, offset, limit int) (ReadResult, error) {
	return stateOps.Read(ctx, p, offset, limit)
}

// Write implements Backend.
func (*State) Write(ctx context.Context, p, content string) error {
	return stateOps.Write(ctx, p, content)
}

// Edit implements Backend.
func (*State) Edit(ctx context.Context, req EditRequest) (int, error) { return stateOps.Edit(ctx, req) }

// Delete implements Deleter.
func (*State) Delete(ctx context.Context, p string) error { return stateOps.Delete(ctx, p) }

// Glob implements Backend; matches are ordered most recently modified first, then by path.
func (*State) Glob(ctx context.Context, pattern, p string) (GlobResult, error) {
	return stateOps.Glob(ctx, pattern, p)
}

// Grep implements Backend; files are searched in path order.
func (*State) Grep(ctx context.Context, req GrepRequest) (GrepResult, error) {
	return stateOps.Grep(ctx, req)
}

// Upload implements Backend. Bytes that are not UTF-8 are stored base64
// with Encoding "base64".
func (*State) Upload(ctx context.Context, files []UploadFile) []UploadResult {
	return stateOps.Upload(ctx, files)
}

// Download implements Backend.
func (*State) Download(ctx context.Context, paths []string) []DownloadResult {
	return stateOps.Download(ctx, paths)
}

// StateStage collects State-backend writes made where agent.UpdateState
// cannot deliver them: in WrapModelCall, or in WrapToolCall after the tool
// returned. The caller puts Update() into the ModelResponse or ToolResponse
// it returns, so the writes land in state with that response.
type StateStage struct {
	mu    sync.Mutex
	base  map[string]FileData
	files map[string]*FileData
}

type stageKey struct{}

// WithStateStage returns a context in which State backends read base's
// files (plus the stage's own writes) and write into the stage.
func WithStateStage(ctx context.Context, base *agent.State) (context.Context, *StateStage) {
	st := &StateStage{files: map[string]*FileData{}}
	if base != nil {
		st.base = base.Files
	}
	return context.WithValue(ctx, stageKey{}, st), st
}

// Update returns the staged writes as a state update, nil when there are none.
func (s *StateStage) Update() *agent.Update {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.files) == 0 {
		return nil
	}
	return &agent.Update{Files: maps.Clone(s.files)}
}

func (s *StateStage) view() map[string]FileData {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.files) == 0 {
		return s.base
	}
	v := maps.Clone(s.base)
	if v == nil {
		v = map[string]FileData{}
	}
	for p, fd := range s.files {
		if fd == nil {
			delete(v, p)
		} else {
			v[p] = *fd
		}
	}
	return v
}

func (s *StateStage) record(_ context.Context, u map[string]*FileData) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	maps.Copy(s.files, u)
	return nil
}

func stateTableFrom(ctx context.Context) (fileTable, error) {
	if st, ok := ctx.Value(stageKey{}).(*StateStage); ok && st != nil {
		return &stagedTable{stateTable: st.view(), stage: st}, nil
	}
	s := agent.ToolState(ctx)
	if s == nil {
		return nil, ErrStateOutsideRun
	}
	return stateTable(s.Files), nil
}

// stateTable is one operation's view of the state's files, whose writes go
// to the running tool call (agent.UpdateState). It is a bare map, so that
// making it a fileTable allocates nothing.
type stateTable map[string]FileData

// stagedTable is a stateTable whose writes go to a StateStage.
type stagedTable struct {
	stateTable
	stage *StateStage
}

func (t stateTable) get(_ context.Context, p string) (FileData, bool, error) {
	fd, ok := t[p]
	return fd, ok, nil
}

func (t stateTable) put(ctx context.Context, p string, fd FileData) error {
	// The update and the file in one allocation: every write makes one.
	w := &filePut{fd: fd}
	w.u.Files = map[string]*FileData{p: &w.fd}
	return agent.UpdateState(ctx, &w.u)
}

// filePut is the state update of one written file.
type filePut struct {
	u  agent.Update
	fd FileData
}

func (t stateTable) remove(ctx context.Context, paths []string) error {
	return agent.UpdateState(ctx, &agent.Update{Files: removals(paths)})
}

func (t *stagedTable) put(ctx context.Context, p string, fd FileData) error {
	return t.stage.record(ctx, map[string]*FileData{p: &fd})
}

func (t *stagedTable) remove(ctx context.Context, paths []string) error {
	return t.stage.record(ctx, removals(paths))
}

// removals is the file update that deletes paths.
func removals(paths []string) map[string]*FileData {
	u := make(map[string]*FileData, len(paths))
	for _, p := range paths {
		u[p] = nil
	}
	return u
}

func (t stateTable) list(_ context.Context, dir string) ([]kvFile, error) {
	prefix := dirPrefix(dir)
	var out []kvFile
	for p, fd := range t {
		if strings.HasPrefix(p, prefix) && p != dir {
			out = append(out, kvFile{Path: p, Data: fd})
		}
	}
	slices.SortFunc(out, func(a, b kvFile) int { return strings.Compare(a.Path, b.Path) })
	return out, nil
}

func (t stateTable) hasChildren(_ context.Context, dir string) (bool, error) {
	for p := range t {
		if strictlyBelow(p, dir) {
			return true, nil
		}
	}
	return false, nil
}

// strictlyBelow reports whether p lies below dir, as
// strings.HasPrefix(p, dirPrefix(dir)) && p != dir does, without building
// the prefix: every write asks it of every file.
func strictlyBelow(p, dir string) bool {
	if dir == "/" {
		return p != "/" && strings.HasPrefix(p, "/")
	}
	return len(p) > len(dir) && p[len(dir)] == '/' && strings.HasPrefix(p, dir)
}

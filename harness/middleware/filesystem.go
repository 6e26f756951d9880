package middleware

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/backend"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/tool"
)

// Names of the filesystem tools, in the order they are built.
const (
	ToolLs        = "ls"
	ToolReadFile  = "read_file"
	ToolWriteFile = "write_file"
	ToolEditFile  = "edit_file"
	ToolDelete    = "delete"
	ToolGlob      = "glob"
	ToolGrep      = "grep"
	ToolExecute   = "execute"
)

// FilesystemToolNames lists every filesystem tool in build order.
var FilesystemToolNames = []string{ToolLs, ToolReadFile, ToolWriteFile, ToolEditFile, ToolDelete, ToolGlob, ToolGrep, ToolExecute}

// NoLimit switches off a limit in FilesystemOptions.
const NoLimit = -1

// Defaults of FilesystemOptions.
const (
	defaultToolTokenLimit         = 20_000
	defaultHumanMessageTokenLimit = 50_000
	defaultMaxExecuteTimeout      = time.Hour
	defaultGrepMaxCount           = 1000
	defaultGlobTimeout            = 10 * time.Second
	defaultGlobWorkers            = 4
	// defaultReadFileLimit is read_file's default window.
	defaultReadFileLimit = 100
)

// FilesystemOptions configure the Filesystem middleware. The zero value
// keeps files in agent state with the Deep Agents defaults.
type FilesystemOptions struct {
	// Backend holds the files; a State backend when nil.
	Backend backend.Backend
	// SystemPrompt is appended to the system prompt of every model call.
	SystemPrompt string
	// ToolDescriptions replaces tool descriptions by tool name; an override
	// is used verbatim and never rewritten. Unknown names and empty
	// descriptions are ignored.
	ToolDescriptions map[string]string
	// Tools lists the tools to build; nil builds all of them. Unlisted tools
	// do not exist for the agent. read_file must be listed.
	Tools []string
	// ToolTokenLimit: results of tools other than the file tools that are
	// longer than 4×ToolTokenLimit characters are saved to
	// <artifacts root>/large_tool_results/ and replaced by a preview;
	// read_file output is capped at the same size.
	// 0 means 20 000 tokens; NoLimit disables both.
	ToolTokenLimit int
	// HumanMessageTokenLimit: a user message longer than
	// 4×HumanMessageTokenLimit characters is saved to
	// <artifacts root>/conversation_history/ and the model sees a preview.
	// 0 means 50 000 tokens; NoLimit disables it.
	HumanMessageTokenLimit int
	// MaxExecuteTimeout is the largest timeout execute accepts
	// (one hour when 0).
	MaxExecuteTimeout time.Duration
	// GrepMaxCount caps grep matches when the call gives no max_count
	// (1000 when 0; NoLimit for no cap).
	GrepMaxCount int
	// GlobTimeout bounds one glob call (10 s when 0) and GlobWorkers how
	// many run at once (4 when 0).
	GlobTimeout time.Duration
	GlobWorkers int
	// Permissions restrict the paths the file tools may read and write.
	// They cannot restrict execute, so with a backend that runs commands
	// every rule path must lie under a Composite route.
	Permissions []Permission
	// MediaSupport says whether the model accepts an image, audio, video
	// or file block of the given MIME type (inToolResult: inside a tool
	// message). Unsupported blocks are replaced by a note in the request.
	// Nil accepts everything.
	MediaSupport func(model llm.ChatModel, kind llm.BlockType, mime string, inToolResult bool) bool
}

// ErrPermissionsNeedRoutes is returned by NewFilesystem when permissions are
// combined with a backend that runs commands outside Composite routes:
// execute is not checked against permissions, so they would be a false
// promise.
var ErrPermissionsNeedRoutes = errors.New("filesystem permissions cannot be enforced on shell commands")

// Filesystem is the FilesystemMiddleware: it gives the agent file tools
// over a backend, filters execute and delete from model calls when the
// backend cannot do them, moves oversized tool results and user messages
// into files, and explains shell path routing for composite backends.
type Filesystem struct {
	agent.Base
	b          backend.Backend
	opts       FilesystemOptions
	perms      *PermissionSet
	tools      []tool.Tool
	evictChars int // 0: disabled
	humanChars int // 0: disabled
	grepMax    int // 0: no cap
	maxExec    time.Duration
	globWait   time.Duration
	globSlots  chan struct{}
	custom     map[string]bool
	// shown is the tool list WrapModelCall last showed the model, with
	// the list it came from (see visibleTools).
	shown atomic.Pointer[shownTools]
}

// shownTools is one derivation of the tools the model sees from those a
// request offers.
type shownTools struct {
	in, out            []llm.ToolSpec // in is a copy of what was offered
	canExec, canDelete bool
	execActive         bool
}

// NewFilesystem validates the options and builds the middleware.
func NewFilesystem(opts FilesystemOptions) (*Filesystem, error) {
	m := &Filesystem{opts: opts, b: opts.Backend, custom: map[string]bool{}}
	if m.b == nil {
		m.b = backend.NewState()
	}
	if opts.Tools != nil && !slices.Contains(opts.Tools, ToolReadFile) {
		return nil, fmt.Errorf("filesystem middleware: Tools must include %q (got %q)", ToolReadFile, opts.Tools)
	}
	for _, name := range opts.Tools {
		if !slices.Contains(FilesystemToolNames, name) {
			return nil, fmt.Errorf("filesystem middleware: Tools lists unknown tool %q; known tools: %s", name, strings.Join(FilesystemToolNames, ", "))
		}
	}
	var err error
	if m.evictChars, err = tokenChars("ToolTokenLimit", opts.ToolTokenLimit, defaultToolTokenLimit); err != nil {
		return nil, err
	}
	if m.humanChars, err = tokenChars("HumanMessageTokenLimit", opts.HumanMessageTokenLimit, defaultHumanMessageTokenLimit); err != nil {
		return nil, err
	}
	switch {
	case opts.MaxExecuteTimeout < 0:
		return nil, fmt.Errorf("filesystem middleware: MaxExecuteTimeout must be positive, got %s", opts.MaxExecuteTimeout)
	case opts.MaxExecuteTimeout == 0:
		m.maxExec = defaultMaxExecuteTimeout
	default:
		m.maxExec = opts.MaxExecuteTimeout
	}
	switch {
	case opts.GrepMaxCount == NoLimit:
	case opts.GrepMaxCount < 0:
		return nil, fmt.Errorf("filesystem middleware: GrepMaxCount must be positive, 0 for the default or NoLimit, got %d", opts.GrepMaxCount)
	case opts.GrepMaxCount == 0:
		m.grepMax = defaultGrepMaxCount
	default:
		m.grepMax = opts.GrepMaxCount
	}
	if opts.GlobTimeout < 0 || opts.GlobWorkers < 0 {
		return nil, fmt.Errorf("filesystem middleware: GlobTimeout and GlobWorkers must not be negative")
	}
	m.globWait = cmpOr(opts.GlobTimeout, defaultGlobTimeout)
	m.globSlots = make(chan struct{}, cmpOr(opts.GlobWorkers, defaultGlobWorkers))
	if m.perms, err = CompilePermissions(opts.Permissions); err != nil {
		return nil, fmt.Errorf("filesystem middleware: %w", err)
	}
	if !m.perms.empty() && backend.CanExecute(m.b) {
		if err := permissionsScopedToRoutes(opts.Permissions, m.b); err != nil {
			return nil, err
		}
	}
	for name, d := range opts.ToolDescriptions {
		if d != "" {
			m.custom[name] = true
		}
	}
	m.tools = m.buildTools()
	return m, nil
}

func cmpOr[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

func tokenChars(field string, v, def int) (int, error) {
	switch {
	case v == NoLimit:
		return 0, nil
	case v < 0:
		return 0, fmt.Errorf("filesystem middleware: %s must be positive, 0 for the default or NoLimit, got %d", field, v)
	case v == 0:
		return def * charsPerToken, nil
	}
	return v * charsPerToken, nil
}

// permissionsScopedToRoutes accepts permissions on a backend that executes
// only when every rule path lies under a Composite route (so the rules
// cover mounts the shell cannot reach anyway).
func permissionsScopedToRoutes(perms []Permission, b backend.Backend) error {
	c, ok := b.(*backend.Composite)
	if !ok {
		return fmt.Errorf("filesystem middleware: %w: the backend can run commands, which bypass path rules; use a backend without execute or a Composite whose routes hold every rule path", ErrPermissionsNeedRoutes)
	}
	for _, p := range perms {
		for _, raw := range p.Paths {
			scoped := false
			for _, r := range c.Routes() {
				if strings.HasPrefix(raw, r.Prefix) || raw == strings.TrimSuffix(r.Prefix, "/") {
					scoped = true
					break
				}
			}
			if !scoped {
				return fmt.Errorf("filesystem middleware: %w: rule path %q is not under a route of the composite backend, and its default backend runs commands", ErrPermissionsNeedRoutes, raw)
			}
		}
	}
	return nil
}

// Name implements agent.Middleware.
func (*Filesystem) Name() string { return FilesystemName }

// Tools implements agent.Middleware.
func (m *Filesystem) Tools() []tool.Tool { return slices.Clone(m.tools) }

// artifactPath joins the backend's artifacts root and a relative path.
func (m *Filesystem) artifactPath(rel string) string {
	return backend.JoinPath(backend.ArtifactsRoot(m.b), rel)
}

// WrapModelCall implements agent.Middleware: it hides execute and delete
// when the backend cannot do them, picks the matching grep and execute
// descriptions, appends the system prompt fragments, replaces media the
// model cannot take, and offloads an oversized last user message.
func (m *Filesystem) WrapModelCall(ctx context.Context, req *agent.ModelRequest, next agent.ModelHandler) (*agent.ModelResponse, error) {
	out := req.Clone()
	var execActive bool
	out.Tools, execActive = m.visibleTools(req.Tools)
	if m.opts.SystemPrompt != "" {
		out = out.AppendSystem(m.opts.SystemPrompt)
	}
	if execActive {
		if c, ok := m.b.(*backend.Composite); ok {
			out = out.AppendSystem(routingPrompt(c))
		}
	}
	if m.opts.MediaSupport != nil {
		out.Messages = m.scrubMedia(out.Model, out.Messages)
	}
	update, msgs := m.offloadHumanMessage(ctx, req)
	if msgs != nil {
		out.Messages = msgs
	}
	resp, err := next(ctx, out)
	if err != nil || update == nil || resp == nil {
		return resp, err
	}
	return &agent.ModelResponse{Response: resp.Response, Update: update.Merge(resp.Update)}, nil
}

// visibleTools returns the tools the model is shown: offered without
// execute and delete when the backend cannot do them, with the grep and
// execute descriptions that fit the rest. An agent offers the same list on
// every call, so the last answer is kept and handed out again while the
// offer is equal to the one it was derived from; the answer is shared,
// which requests allow (middleware never modify a request's slices).
func (m *Filesystem) visibleTools(offered []llm.ToolSpec) ([]llm.ToolSpec, bool) {
	canExec, canDelete := backend.CanExecute(m.b), backend.CanDelete(m.b)
	if s := m.shown.Load(); s != nil && s.canExec == canExec && s.canDelete == canDelete && sameSpecs(s.in, offered) {
		return s.out, s.execActive
	}
	tools := make([]llm.ToolSpec, 0, len(offered))
	for _, t := range offered {
		if t.Name == ToolExecute && !canExec || t.Name == ToolDelete && !canDelete {
			continue
		}
		tools = append(tools, t)
	}
	has := func(name string) bool {
		return slices.ContainsFunc(tools, func(t llm.ToolSpec) bool { return t.Name == name })
	}
	execActive, grepVis, globVis := has(ToolExecute), has(ToolGrep), has(ToolGlob)
	for i, t := range tools {
		switch {
		case t.Name == ToolGrep && !m.custom[ToolGrep] && isGrepDefault(t.Description):
			tools[i].Description = grepDescription(execActive)
		case t.Name == ToolExecute && !m.custom[ToolExecute] && isExecuteDefault(t.Description):
			tools[i].Description = executeDescription(grepVis, globVis)
		}
	}
	tools = slices.Clip(tools)
	m.shown.Store(&shownTools{in: slices.Clone(offered), out: tools, canExec: canExec, canDelete: canDelete, execActive: execActive})
	return tools, execActive
}

// sameSpecs reports whether two tool lists are equal. Comparing an agent's
// list with a copy of itself is cheap: their strings and schemas are the
// same memory, which Go compares without reading.
func sameSpecs(a, b []llm.ToolSpec) bool {
	return slices.EqualFunc(a, b, func(x, y llm.ToolSpec) bool {
		return x.Name == y.Name && x.Description == y.Description && bytes.Equal(x.Parameters, y.Parameters) &&
			(x.CacheControl == y.CacheControl || x.CacheControl != nil && y.CacheControl != nil && *x.CacheControl == *y.CacheControl)
	})
}

func isGrepDefault(d string) bool { return d == grepDescription(true) || d == grepDescription(false) }

func isExecuteDefault(d string) bool {
	for _, g := range []bool{true, false} {
		for _, gl := range []bool{true, false} {
			if d == executeDescription(g, gl) {
				return true
			}
		}
	}
	return false
}

// routingPrompt lists which composite routes the shell can reach and where.
// A mount inside the shell's working directory is given relative to it
// ("./app/"): commands start there, and the prompt then holds no path of the
// machine it was assembled on, so it is the same on every machine.
func routingPrompt(c *backend.Composite) string {
	shell, localDefault := c.Default().(*backend.LocalShell)
	routes := c.Routes()
	slices.SortStableFunc(routes, func(a, b backend.Route) int { return len(b.Prefix) - len(a.Prefix) })
	var mapped [][2]string
	var unmapped []string
	for _, r := range routes {
		fsb, isFS := r.Backend.(interface {
			Root() string
			Virtual() bool
		})
		if localDefault && isFS {
			host := "/"
			if fsb.Virtual() {
				host = hostDir(shell.Root(), fsb.Root())
			}
			mapped = append(mapped, [2]string{r.Prefix, host})
			continue
		}
		unmapped = append(unmapped, r.Prefix)
	}
	return routingSection(mapped, unmapped)
}

// hostDir is dir as the shell should use it: "./rel/" when dir lies inside
// the shell's working directory wd, else dir itself; always ending in "/".
func hostDir(wd, dir string) string {
	if rel, err := filepath.Rel(wd, dir); err == nil && filepath.IsLocal(rel) {
		if rel == "." {
			return "./"
		}
		return "./" + filepath.ToSlash(rel) + "/"
	}
	return strings.TrimSuffix(dir, "/") + "/"
}

// WrapToolCall implements agent.Middleware: it tags media read by read_file
// and moves oversized results of other tools into files.
func (m *Filesystem) WrapToolCall(ctx context.Context, req *agent.ToolRequest, next agent.ToolHandler) (*agent.ToolResponse, error) {
	resp, err := next(ctx, req)
	if err != nil || resp == nil {
		return resp, err
	}
	if req.Call.Name == ToolReadFile && req.Tool != nil && slices.Contains(m.tools, req.Tool) {
		resp = tagMedia(req.Call, resp)
	}
	if m.evictChars == 0 || selfLimiting[req.Call.Name] && slices.Contains(m.tools, req.Tool) {
		return resp, nil
	}
	return m.offloadToolResult(ctx, req, resp), nil
}

// selfLimiting tools cap their own output and are never offloaded.
var selfLimiting = map[string]bool{ToolLs: true, ToolGlob: true, ToolGrep: true, ToolReadFile: true, ToolEditFile: true, ToolWriteFile: true, ToolDelete: true}

// Metadata keys read_file sets on messages carrying media.
const (
	MetaReadFilePath      = "read_file_path"
	MetaReadFileMediaType = "read_file_media_type"
)

func tagMedia(call llm.ToolCall, resp *agent.ToolResponse) *agent.ToolResponse {
	kind := ""
	for _, b := range resp.Message.Content {
		if b.Type != llm.BlockText {
			kind = string(b.Type)
			break
		}
	}
	if kind == "" {
		return resp
	}
	p, _, ok := stringArg(call.Args, "file_path")
	if !ok {
		return resp
	}
	if v, err := backend.ValidatePath(p); err == nil {
		p = v
	}
	c := *resp
	c.Message = resp.Message.Clone()
	if c.Message.Metadata == nil {
		c.Message.Metadata = map[string]string{}
	}
	c.Message.Metadata[MetaReadFilePath] = p
	c.Message.Metadata[MetaReadFileMediaType] = kind
	return &c
}

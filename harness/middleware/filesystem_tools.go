package middleware

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/dageval/dageval/harness/backend"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/tool"
	"github.com/dageval/dageval/internal/jsonscan"
)

// Tool argument schemas (JSON Schema), written by hand so that defaults,
// nullability and bounds are exactly what the model is told.
var toolSchemas = map[string]string{
	ToolLs: `{"type":"object","properties":{"path":{"type":"string","description":"Absolute path of the directory to list, e.g. / or /src."}},"required":["path"]}`,
	ToolReadFile: `{"type":"object","properties":{` +
		`"file_path":{"type":"string","description":` + strconv.Quote(argAbsPath) + `},` +
		`"offset":{"type":"integer","default":0,"description":` + strconv.Quote(argOffset) + `},` +
		`"limit":{"type":"integer","default":100,"description":` + strconv.Quote(argLimit) + `}},"required":["file_path"]}`,
	ToolWriteFile: `{"type":"object","properties":{` +
		`"file_path":{"type":"string","description":` + strconv.Quote(argAbsPath) + `},` +
		`"content":{"type":"string","description":"The complete new content of the file."}},"required":["file_path","content"]}`,
	ToolEditFile: `{"type":"object","properties":{` +
		`"file_path":{"type":"string","description":` + strconv.Quote(argAbsPath) + `},` +
		`"old_string":{"type":"string","description":` + strconv.Quote(argOldString) + `},` +
		`"new_string":{"type":"string","description":` + strconv.Quote(argNewString) + `},` +
		`"replace_all":{"type":"boolean","default":false,"description":"Replace every occurrence instead of exactly one."}},` +
		`"required":["file_path","old_string","new_string"]}`,
	ToolDelete: `{"type":"object","properties":{"file_path":{"type":"string","description":` + strconv.Quote(argAbsPath) + `}},"required":["file_path"]}`,
	ToolGlob: `{"type":"object","properties":{` +
		`"pattern":{"type":"string","description":"Glob pattern, e.g. *.py, **/*.md or /src/*.go."},` +
		`"path":{"anyOf":[{"type":"string"},{"type":"null"}],"default":null,"description":` + strconv.Quote(argGlobPath) + `}},"required":["pattern"]}`,
	ToolGrep: `{"type":"object","properties":{` +
		`"pattern":{"type":"string","description":"Literal text to search for (not a regular expression)."},` +
		`"path":{"anyOf":[{"type":"string"},{"type":"null"}],"default":null,"description":` + strconv.Quote(argGrepPath) + `},` +
		`"glob":{"anyOf":[{"type":"string"},{"type":"null"}],"default":null,"description":` + strconv.Quote(argGrepGlob) + `},` +
		`"output_mode":{"type":"string","enum":["files_with_matches","content","count"],"default":"files_with_matches","description":` + strconv.Quote(argGrepMode) + `},` +
		`"max_count":{"anyOf":[{"type":"integer","exclusiveMinimum":0},{"type":"null"}],"default":null,"description":` + strconv.Quote(argMaxCount) + `}},"required":["pattern"]}`,
	ToolExecute: `{"type":"object","properties":{` +
		`"command":{"type":"string","description":"The shell command to run."},` +
		`"timeout":{"anyOf":[{"type":"integer"},{"type":"null"}],"default":null,"description":` + strconv.Quote(argTimeout) + `}},"required":["command"]}`,
}

// toolParams holds toolSchemas as the bytes every Filesystem shares (they
// are never modified), so building the middleware copies no schema.
var toolParams = func() map[string]json.RawMessage {
	out := make(map[string]json.RawMessage, len(toolSchemas))
	for name, s := range toolSchemas {
		out[name] = json.RawMessage(s)
	}
	return out
}()

var defaultDescriptions = map[string]string{
	ToolLs: lsDescription, ToolReadFile: readFileDescription, ToolWriteFile: writeFileDescription,
	ToolEditFile: editFileDescription, ToolDelete: deleteDescription, ToolGlob: globDescription,
	ToolGrep: grepDescription(true), ToolExecute: executeDescription(true, true),
}

func (m *Filesystem) impl(name string) func(context.Context, json.RawMessage) (tool.Result, error) {
	switch name {
	case ToolLs:
		return m.ls
	case ToolReadFile:
		return m.readFile
	case ToolWriteFile:
		return m.writeFile
	case ToolEditFile:
		return m.editFile
	case ToolDelete:
		return m.deleteFile
	case ToolGlob:
		return m.glob
	case ToolGrep:
		return m.grep
	case ToolExecute:
		return m.execute
	}
	return nil
}

func (m *Filesystem) buildTools() []tool.Tool {
	out := make([]tool.Tool, 0, len(FilesystemToolNames))
	// The tools in one allocation: an eval run builds a filesystem's
	// tools for each agent of each cell.
	funcs := make([]tool.Func, len(FilesystemToolNames))
	for i, name := range FilesystemToolNames {
		if m.opts.Tools != nil && !containsString(m.opts.Tools, name) {
			continue
		}
		desc := defaultDescriptions[name]
		if d := m.opts.ToolDescriptions[name]; d != "" {
			desc = d
		}
		f := &funcs[i]
		*f = tool.Func{
			ToolSpec: llm.ToolSpec{Name: name, Description: desc, Parameters: toolParams[name]},
			Fn:       m.impl(name),
		}
		if selfValidated[name] {
			out = append(out, f)
			continue
		}
		out = append(out, tool.ValidatedBy(f, argSchemas[name]))
	}
	return out
}

func containsString(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// selfValidated tools check their arguments against their schema in
// decode instead of through tool.Validated: the pass that decodes the
// usual arguments proves them valid too, so a call reads them once.
var selfValidated = map[string]bool{ToolLs: true, ToolReadFile: true, ToolWriteFile: true, ToolEditFile: true, ToolDelete: true}

// argSchemas are the schemas of the filesystem tools, parsed when a call
// first needs one (tool.BuiltinSchema), not at program start.
var argSchemas = func() map[string]*tool.Schema {
	out := make(map[string]*tool.Schema, len(toolParams))
	for name, raw := range toolParams {
		out[name] = tool.BuiltinSchema(raw)
	}
	return out
}()

// decode reads the arguments of the tool name into dst, a struct whose
// fields are those given: the arguments of a tool call are almost always a
// flat object naming each field once, which decodeFields reads in one pass
// without encoding/json's reflection (that was a seventh of a
// write_file + read_file step). Anything else is validated against the
// schema, when the tool is selfValidated, and goes to encoding/json, so
// the outcome is that of tool.Validated and encoding/json either way.
func decode[T any](name string, raw json.RawMessage, dst *T, fields ...argField) *tool.Result {
	if decodeFields(raw, fields) {
		return nil
	}
	if s := argSchemas[name]; s != nil && selfValidated[name] {
		if err := s.Validate(raw); err != nil {
			r := tool.InvalidArgs(name, err)
			return &r
		}
	}
	if len(raw) == 0 {
		raw = json.RawMessage("{}")
	}
	// Decoded apart, so that dst stays on its caller's stack when the
	// fast path takes the call.
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		r := tool.InvalidArgs(name, err)
		return &r
	}
	*dst = v
	return nil
}

// argField is one field of a tool's argument struct: its JSON name and
// where its value goes (exactly one of the pointers is set).
type argField struct {
	name string
	// need: the schema requires the field, so arguments without it are
	// left to the validator.
	need bool
	str  *string
	num  *int
	opt  **int // a number the tool tells apart from an absent one
	flag *bool
}

// needArg is a required string field (every string field of the
// selfValidated tools is required).
func needArg(name string, p *string) argField { return argField{name: name, need: true, str: p} }
func intArg(name string, p *int) argField     { return argField{name: name, num: p} }
func optArg(name string, p **int) argField    { return argField{name: name, opt: p} }
func boolArg(name string, p *bool) argField   { return argField{name: name, flag: p} }

// decodeFields reads raw into fields when encoding/json would surely read
// it the same way: an object whose keys are fields' names spelled exactly,
// each at most once, with values of the fields' types. It reports false,
// having set some fields perhaps, for anything else: other keys (which
// encoding/json matches case-insensitively), nulls, numbers that are not
// plain integers, strings with \u escapes or bytes that are not UTF-8.
func decodeFields(raw json.RawMessage, fields []argField) bool {
	var seen, need uint64
	for i, f := range fields {
		if f.need {
			need |= 1 << i
		}
	}
	return len(fields) <= 64 && jsonscan.FlatObject(raw, func(key, value []byte) bool {
		k := -1
		for i, f := range fields {
			if len(key) == len(f.name)+2 && string(key[1:len(key)-1]) == f.name {
				k = i
				break
			}
		}
		if k < 0 || seen&(1<<k) != 0 {
			return false
		}
		seen |= 1 << k
		f := fields[k]
		switch {
		case f.str != nil:
			s, ok := jsonscan.Unquote(value)
			*f.str = s
			return ok
		case f.num != nil, f.opt != nil:
			if value[0] != '-' && (value[0] < '0' || value[0] > '9') {
				return false
			}
			n, ok := jsonscan.Int(value)
			if f.num != nil {
				*f.num = n
			} else {
				*f.opt = &n
			}
			return ok
		default:
			switch string(value) {
			case "true":
				*f.flag = true
			case "false":
				*f.flag = false
			default:
				return false
			}
			return true
		}
	}) && seen&need == need
}

// errText renders a backend error for the model.
func errText(err error) string { return "Error: " + err.Error() }

// toolErr turns an error into an error result, except that cancellation
// is returned as an error so the agent stops.
func toolErr(ctx context.Context, err error) (tool.Result, error) {
	if ctx.Err() != nil {
		return tool.Result{}, ctx.Err()
	}
	return tool.Errorf("%s", errText(err)), nil
}

func deniedText(op Operation, p string) string {
	return fmt.Sprintf("Error: permission denied for %s on %s", op, p)
}

// allowedPath validates a path argument and checks that the permissions
// allow op on it; a non-nil result is the error to answer with instead.
func (m *Filesystem) allowedPath(path string, op Operation) (string, *tool.Result) {
	p, err := backend.ValidatePath(path)
	if err != nil {
		r := tool.Errorf("%s", errText(err))
		return "", &r
	}
	if m.perms.Check(op, p) == Deny {
		r := tool.Errorf("%s", deniedText(op, p))
		return "", &r
	}
	return p, nil
}

// readable drops paths the permissions deny reading.
func (m *Filesystem) readable(paths []string) []string {
	if m.perms.empty() {
		return paths
	}
	out := paths[:0:0]
	for _, p := range paths {
		if m.perms.Check(OpRead, strings.TrimSuffix(p, "/")) != Deny {
			out = append(out, p)
		}
	}
	return out
}

func formatPaths(paths []string) string {
	if len(paths) == 0 {
		return noFilesFound
	}
	return pyListRepr(truncateList(paths))
}

func (m *Filesystem) ls(ctx context.Context, raw json.RawMessage) (tool.Result, error) {
	var a struct {
		Path string `json:"path"`
	}
	if r := decode(ToolLs, raw, &a, needArg("path", &a.Path)); r != nil {
		return *r, nil
	}
	p, r := m.allowedPath(a.Path, OpRead)
	if r != nil {
		return *r, nil
	}
	entries, err := m.b.Ls(ctx, p)
	if err != nil {
		return toolErr(ctx, err)
	}
	paths := make([]string, len(entries))
	for i, e := range entries {
		paths[i] = e.Path
	}
	return tool.Text(formatPaths(m.readable(paths))), nil
}

func (m *Filesystem) readFile(ctx context.Context, raw json.RawMessage) (tool.Result, error) {
	a := struct {
		FilePath string `json:"file_path"`
		Offset   int    `json:"offset"`
		Limit    *int   `json:"limit"`
	}{}
	if r := decode(ToolReadFile, raw, &a, needArg("file_path", &a.FilePath), intArg("offset", &a.Offset), optArg("limit", &a.Limit)); r != nil {
		return *r, nil
	}
	limit := defaultReadFileLimit
	if a.Limit != nil {
		limit = *a.Limit
	}
	p, r := m.allowedPath(a.FilePath, OpRead)
	if r != nil {
		return *r, nil
	}
	res, err := m.b.Read(ctx, p, a.Offset, limit)
	if err != nil {
		return toolErr(ctx, err)
	}
	content := res.File.Content
	if strings.TrimSpace(content) == "" {
		if content == "" && res.NoLinesRequested {
			return tool.Text(noLinesReminder(limit)), nil
		}
		return tool.Text(emptyFileReminder), nil
	}
	if res.File.Encoding == backend.EncodingBase64 || backend.IsBinaryPath(p) {
		return mediaResult(p, res.File), nil
	}
	start := res.StartLine
	if start == 0 {
		start = max(a.Offset, 0) + 1
	}
	rows := numberedRows(content, start)
	out := m.capRead(rows, p, res) + clampedOffsetNotice(a.Offset)
	return tool.Text(out), nil
}

// mediaResult is a read_file result holding a binary file as one media block.
func mediaResult(p string, fd backend.FileData) tool.Result {
	kind, mime := backend.MediaKind(p)
	if kind == "text" {
		kind, mime = "file", backend.MIMEType(p)
	}
	data := fd.Content
	if fd.Encoding != backend.EncodingBase64 {
		data = base64.StdEncoding.EncodeToString([]byte(fd.Content))
	}
	return tool.Result{Content: []llm.Block{{Type: llm.BlockType(kind), Data: data, MediaType: mime}}}
}

// capRead renders a window with its pagination notice, cutting it at the
// last complete source line that fits the size limit so that the notice
// never points past lines the model did not see.
func (m *Filesystem) capRead(rows []row, p string, res backend.ReadResult) string {
	body := renderRows(rows)
	notice := readNotice(res.StartLine, res.EndLine, res.TotalLines, res.NextOffset)
	limit := m.evictChars
	if limit == 0 || utf8.RuneCountInString(body)+utf8.RuneCountInString(notice) < limit {
		return body + notice
	}
	msg := readTruncationMessage(p)
	msgLen := utf8.RuneCountInString(msg)
	if res.StartLine != 0 && res.EndLine != 0 {
		// Boundaries sit after the last row of each source line; rows
		// numbered past EndLine are not file content and never count.
		type boundary struct{ bytes, chars, line int }
		var bounds []boundary
		width := 0
		for _, r := range rows {
			width = max(width, len(r.marker()))
		}
		bytePos, charPos := 0, 0
		for i, r := range rows {
			if r.line > res.EndLine {
				break
			}
			rowLen := width + 2 + len(r.text)
			bytePos += rowLen
			charPos += width + 2 + utf8.RuneCountInString(r.text)
			if i+1 == len(rows) || rows[i+1].line != r.line {
				bounds = append(bounds, boundary{bytePos, charPos, r.line})
			}
			bytePos++
			charPos++
		}
		for i := len(bounds) - 1; i >= 0; i-- {
			bd := bounds[i]
			adjusted := readNotice(res.StartLine, bd.line, res.TotalLines, bd.line)
			if bd.chars+msgLen+utf8.RuneCountInString(adjusted) <= limit {
				return body[:bd.bytes] + msg + adjusted
			}
		}
	}
	return cutChars(body, max(0, limit-msgLen)) + msg
}

func (m *Filesystem) writeFile(ctx context.Context, raw json.RawMessage) (tool.Result, error) {
	var a struct {
		FilePath string `json:"file_path"`
		Content  string `json:"content"`
	}
	if r := decode(ToolWriteFile, raw, &a, needArg("file_path", &a.FilePath), needArg("content", &a.Content)); r != nil {
		return *r, nil
	}
	p, r := m.allowedPath(a.FilePath, OpWrite)
	if r != nil {
		return *r, nil
	}
	if err := m.b.Write(ctx, p, a.Content); err != nil {
		return toolErr(ctx, err)
	}
	return tool.Text("Updated file " + p), nil
}

func (m *Filesystem) editFile(ctx context.Context, raw json.RawMessage) (tool.Result, error) {
	var a struct {
		FilePath   string `json:"file_path"`
		OldString  string `json:"old_string"`
		NewString  string `json:"new_string"`
		ReplaceAll bool   `json:"replace_all"`
	}
	if r := decode(ToolEditFile, raw, &a, needArg("file_path", &a.FilePath), needArg("old_string", &a.OldString), needArg("new_string", &a.NewString), boolArg("replace_all", &a.ReplaceAll)); r != nil {
		return *r, nil
	}
	p, r := m.allowedPath(a.FilePath, OpWrite)
	if r != nil {
		return *r, nil
	}
	n, err := m.b.Edit(ctx, backend.EditRequest{Path: p, Old: a.OldString, New: a.NewString, ReplaceAll: a.ReplaceAll})
	if err != nil {
		return toolErr(ctx, err)
	}
	return tool.Text(fmt.Sprintf("Successfully replaced %d instance(s) of the string in '%s'", n, p)), nil
}

func (m *Filesystem) deleteFile(ctx context.Context, raw json.RawMessage) (tool.Result, error) {
	var a struct {
		FilePath string `json:"file_path"`
	}
	if r := decode(ToolDelete, raw, &a, needArg("file_path", &a.FilePath)); r != nil {
		return *r, nil
	}
	p, err := backend.ValidatePath(a.FilePath)
	if err != nil {
		return tool.Errorf("%s", errText(err)), nil
	}
	if !m.perms.empty() {
		if deny := m.perms.deleteDenyPatterns(p, hasDescendants(ctx, m.b, p)); len(deny) > 0 {
			return tool.Errorf("%s (matches deny rule(s): %s)", deniedText(OpWrite, p), strings.Join(deny, ", ")), nil
		}
	}
	d, ok := m.b.(backend.Deleter)
	if !ok {
		return tool.Errorf("%s", deleteNotAvailable), nil
	}
	if err := d.Delete(ctx, p); err != nil {
		return toolErr(ctx, err)
	}
	return tool.Text("Deleted " + p), nil
}

func (m *Filesystem) glob(ctx context.Context, raw json.RawMessage) (tool.Result, error) {
	var a struct {
		Pattern string  `json:"pattern"`
		Path    *string `json:"path"`
	}
	if r := decode(ToolGlob, raw, &a); r != nil {
		return *r, nil
	}
	permPath, searchPath := "/", ""
	if a.Path != nil {
		p, err := backend.ValidatePath(*a.Path)
		if err != nil {
			return tool.Errorf("%s", errText(err)), nil
		}
		permPath, searchPath = p, p
	}
	if m.perms.Check(OpRead, permPath) == Deny {
		return tool.Errorf("%s", deniedText(OpRead, permPath)), nil
	}
	select {
	case m.globSlots <- struct{}{}:
	default:
		return tool.Errorf("%s", globTooManyCalls), nil
	}
	type outcome struct {
		res backend.GlobResult
		err error
	}
	gctx, cancel := context.WithCancel(ctx)
	done := make(chan outcome, 1)
	go func() {
		defer func() { <-m.globSlots }()
		var o outcome
		defer func() {
			if p := recover(); p != nil {
				o = outcome{err: fmt.Errorf("panic: %v", p)}
			}
			done <- o
		}()
		o.res, o.err = m.b.Glob(gctx, a.Pattern, searchPath)
	}()
	timer := time.NewTimer(m.globWait)
	defer timer.Stop()
	var o outcome
	select {
	case o = <-done:
		cancel()
	case <-timer.C:
		cancel() // the walk stops at its next context check and frees its slot
		return tool.Errorf("%s", globTimeoutMessage(m.globWait.Seconds())), nil
	case <-ctx.Done():
		cancel()
		return tool.Result{}, ctx.Err()
	}
	if o.err != nil {
		if ctx.Err() != nil {
			return tool.Result{}, ctx.Err()
		}
		var be *backend.Error
		if errors.As(o.err, &be) {
			return tool.Errorf("%s", errText(o.err)), nil
		}
		return tool.Errorf("Error: glob failed: %v", o.err), nil
	}
	paths := make([]string, len(o.res.Matches))
	for i, fi := range o.res.Matches {
		paths[i] = fi.Path
	}
	out := formatPaths(m.readable(paths))
	if o.res.Truncated {
		out += "\n\n" + globTruncationNote
	}
	return tool.Text(out), nil
}

func (m *Filesystem) grep(ctx context.Context, raw json.RawMessage) (tool.Result, error) {
	var a struct {
		Pattern    string  `json:"pattern"`
		Path       *string `json:"path"`
		Glob       *string `json:"glob"`
		OutputMode string  `json:"output_mode"`
		MaxCount   *int    `json:"max_count"`
	}
	if r := decode(ToolGrep, raw, &a); r != nil {
		return *r, nil
	}
	req := backend.GrepRequest{Pattern: a.Pattern, MaxCount: m.grepMax}
	if a.Path != nil {
		p, r := m.allowedPath(*a.Path, OpRead)
		if r != nil {
			return *r, nil
		}
		req.Path = p
	}
	if a.Glob != nil {
		req.Glob = *a.Glob
	}
	if a.MaxCount != nil {
		req.MaxCount = *a.MaxCount
	}
	mode := grepMode(a.OutputMode)
	if mode == "" {
		mode = grepFilesWithMatches
	}
	res, err := m.b.Grep(ctx, req)
	if err != nil && ctx.Err() != nil {
		return tool.Result{}, ctx.Err()
	}
	backendFound := len(res.Matches) > 0
	matches, truncated := res.Matches, res.Truncated
	if req.MaxCount > 0 && len(matches) > req.MaxCount {
		matches, truncated = matches[:req.MaxCount], true
	}
	if !m.perms.empty() {
		kept := matches[:0:0]
		for _, gm := range matches {
			if m.perms.Check(OpRead, gm.Path) != Deny {
				kept = append(kept, gm)
			}
		}
		matches = kept
	}
	if err != nil {
		text := errText(err)
		var be *backend.Error
		if !errors.As(err, &be) {
			text = "Error: grep failed: " + err.Error()
		}
		if len(matches) == 0 {
			return tool.Errorf("%s", text), nil
		}
		return tool.Errorf("%s\n\nPartial matches:\n%s", truncateText(text), truncateText(formatGrep(matches, mode))), nil
	}
	out := truncateText(formatGrep(matches, mode))
	switch {
	case truncated:
		out += "\n\n" + grepTruncationNote
	case !backendFound:
		if hint := regexLiteralHint(a.Pattern); hint != "" {
			out += "\n\n" + hint
		}
	}
	return tool.Text(out), nil
}

func (m *Filesystem) execute(ctx context.Context, raw json.RawMessage) (tool.Result, error) {
	var a struct {
		Command string `json:"command"`
		Timeout *int   `json:"timeout"`
	}
	if r := decode(ToolExecute, raw, &a); r != nil {
		return *r, nil
	}
	req := backend.ExecuteRequest{Command: a.Command}
	if a.Timeout != nil {
		t := *a.Timeout
		maxSecs := int(m.maxExec / time.Second)
		switch {
		case t < 0:
			return tool.Errorf("Error: timeout must be non-negative, got %d.", t), nil
		case t > maxSecs:
			return tool.Errorf("Error: timeout %ds exceeds maximum allowed (%ds).", t, maxSecs), nil
		case t == 0:
			req.Timeout = backend.NoTimeout
		default:
			req.Timeout = time.Duration(t) * time.Second
		}
	}
	ex, ok := m.b.(backend.Executor)
	if !ok || !backend.CanExecute(m.b) {
		return tool.Errorf("%s", execNotAvailable), nil
	}
	res, err := ex.Execute(ctx, req)
	if err != nil {
		if ctx.Err() != nil {
			return tool.Result{}, ctx.Err()
		}
		switch backend.CodeOf(err) {
		case backend.Unsupported:
			return tool.Errorf("Error: Execution not available. %v", err), nil
		case backend.InvalidArgument:
			return tool.Errorf("Error: Invalid parameter. %v", err), nil
		}
		return tool.Errorf("Error: %v", err), nil
	}
	out := res.Output
	artifact := json.RawMessage(`{}`)
	if res.ExitCode != nil {
		status := "succeeded"
		if *res.ExitCode != 0 {
			status = "failed"
		}
		out += fmt.Sprintf("\n[Command %s with exit code %d]", status, *res.ExitCode)
		artifact = json.RawMessage(fmt.Sprintf(`{"exit_code":%d}`, *res.ExitCode))
	}
	if res.Truncated {
		out += outputTruncatedLine
	}
	return tool.Result{Content: []llm.Block{llm.TextBlock(out)}, Artifact: artifact}, nil
}

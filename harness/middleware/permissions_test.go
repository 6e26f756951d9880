package middleware_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/backend"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/middleware"
)

func rule(mode middleware.PermissionMode, ops string, paths ...string) middleware.Permission {
	var o []middleware.Operation
	for _, c := range ops {
		switch c {
		case 'r':
			o = append(o, middleware.OpRead)
		case 'w':
			o = append(o, middleware.OpWrite)
		}
	}
	return middleware.Permission{Operations: o, Paths: paths, Mode: mode}
}

func compile(t *testing.T, perms ...middleware.Permission) *middleware.PermissionSet {
	t.Helper()
	ps, err := middleware.CompilePermissions(perms)
	require.NoError(t, err)
	return ps
}

// Case 47: deny rules through the tools; results filtered.
func TestPermissionsThroughTools(t *testing.T) {
	mw := newMW(t, middleware.FilesystemOptions{Permissions: []middleware.Permission{
		rule(middleware.Deny, "w", "/secrets/**"),
		rule(middleware.Deny, "r", "/private/**", "/top.key"),
	}})
	fs := files("/secrets/.env", "KEY=1", "/secrets/x", "x", "/private/p.txt", "TODO p", "/private/.hidden", "TODO h", "/pub/a.txt", "TODO a", "/top.key", "TODO k")
	s := drive(t, mw, fs, []llm.ToolCall{
		call("w1", "write_file", map[string]any{"file_path": "/secrets/x", "content": "new"}),
		call("w2", "write_file", map[string]any{"file_path": "/secrets/.env", "content": "new"}),
		call("e1", "edit_file", map[string]any{"file_path": "/secrets/x", "old_string": "x", "new_string": "y"}),
		call("w3", "write_file", map[string]any{"file_path": "/pub/b.txt", "content": "ok"}),
		call("r1", "read_file", map[string]any{"file_path": "/private/p.txt"}),
		call("r2", "read_file", map[string]any{"file_path": "/private/.hidden"}),
		call("r3", "read_file", map[string]any{"file_path": "/secrets/x"}),
		call("l1", "ls", map[string]any{"path": "/private/p.txt"}),
		call("l2", "ls", map[string]any{"path": "/"}),
		call("l3", "ls", map[string]any{"path": "/private"}),
		call("g1", "glob", map[string]any{"pattern": "*"}),
		call("g2", "grep", map[string]any{"pattern": "TODO"}),
		call("dd", "read_file", map[string]any{"file_path": "/pub/../private/p.txt"}),
	})
	want := map[string]struct {
		text  string
		isErr bool
	}{
		"w1": {"Error: permission denied for write on /secrets/x", true},
		"w2": {"Error: permission denied for write on /secrets/.env", true},
		"e1": {"Error: permission denied for write on /secrets/x", true},
		"w3": {"Updated file /pub/b.txt", false},
		"r1": {"Error: permission denied for read on /private/p.txt", true},
		"r2": {"Error: permission denied for read on /private/.hidden", true},
		"r3": {"1  x", false},
		"l1": {"Error: permission denied for read on /private/p.txt", true},
		"l2": {"['/private/', '/pub/', '/secrets/']", false},
		"l3": {"No files found", false},
		"g1": {"['/pub/a.txt', '/secrets/x']", false},
		"g2": {"/pub/a.txt", false},
	}
	for id, w := range want {
		got, isErr := s.text(t, id)
		assert.Equal(t, w.text, got, id)
		assert.Equal(t, w.isErr, isErr, id)
	}
	out, isErr := s.text(t, "dd")
	assert.True(t, isErr)
	assert.Contains(t, out, "Path traversal not allowed")
	assert.Equal(t, "KEY=1", s.res.State.Files["/secrets/.env"].Content, "the dot-file under /secrets/** was protected")

	// No rules: everything allowed.
	free := newMW(t, middleware.FilesystemOptions{})
	out, isErr = oneShot(t, free, fs, "write_file", map[string]any{"file_path": "/secrets/.env", "content": "z"})
	assert.False(t, isErr)
	assert.Equal(t, "Updated file /secrets/.env", out)
	out, isErr = oneShot(t, free, fs, "read_file", map[string]any{"file_path": "/../etc/passwd"})
	assert.True(t, isErr, "validation applies without rules too")
	assert.Contains(t, out, "Path traversal not allowed")

	// ls of a denied directory.
	rootDeny := newMW(t, middleware.FilesystemOptions{Permissions: []middleware.Permission{rule(middleware.Deny, "r", "/private", "/private/**")}})
	out, isErr = oneShot(t, rootDeny, fs, "ls", map[string]any{"path": "/private"})
	assert.True(t, isErr)
	assert.Equal(t, "Error: permission denied for read on /private", out)
	out, _ = oneShot(t, rootDeny, fs, "ls", map[string]any{"path": "/"})
	assert.Equal(t, "['/pub/', '/secrets/', '/top.key']", out, "the denied directory entry itself is filtered")
}

// Case 48 and the dot-file decision.
func TestPermissionEvaluation(t *testing.T) {
	tests := []struct {
		name  string
		rules []middleware.Permission
		op    middleware.Operation
		path  string
		want  middleware.PermissionMode
	}{
		{"no rules", nil, middleware.OpWrite, "/x", middleware.Allow},
		{"allow before deny", []middleware.Permission{rule(middleware.Allow, "w", "/a/**"), rule(middleware.Deny, "w", "/**")}, middleware.OpWrite, "/a/b", middleware.Allow},
		{"deny before allow", []middleware.Permission{rule(middleware.Deny, "w", "/**"), rule(middleware.Allow, "w", "/a/**")}, middleware.OpWrite, "/a/b", middleware.Deny},
		{"deny before interrupt", []middleware.Permission{rule(middleware.Deny, "r", "/a/**"), rule(middleware.Interrupt, "r", "/a/**")}, middleware.OpRead, "/a/b", middleware.Deny},
		{"interrupt", []middleware.Permission{rule(middleware.Interrupt, "r", "/a/**")}, middleware.OpRead, "/a/b", middleware.Interrupt},
		{"other operation", []middleware.Permission{rule(middleware.Deny, "w", "/a/**")}, middleware.OpRead, "/a/b", middleware.Allow},
		{"zero mode allows", []middleware.Permission{{Operations: []middleware.Operation{"read"}, Paths: []string{"/a/**"}}, rule(middleware.Deny, "r", "/**")}, middleware.OpRead, "/a/b", middleware.Allow},
		{"dir itself not covered", []middleware.Permission{rule(middleware.Deny, "r", "/secrets/**")}, middleware.OpRead, "/secrets", middleware.Allow},
		{"dot-file covered", []middleware.Permission{rule(middleware.Deny, "r", "/secrets/**")}, middleware.OpRead, "/secrets/.env", middleware.Deny},
		{"dot-dir covered", []middleware.Permission{rule(middleware.Deny, "r", "/**")}, middleware.OpRead, "/.git/config", middleware.Deny},
		{"star covers dot-files", []middleware.Permission{rule(middleware.Deny, "r", "/cfg/*")}, middleware.OpRead, "/cfg/.npmrc", middleware.Deny},
		{"star stays in its segment", []middleware.Permission{rule(middleware.Deny, "r", "/cfg/*")}, middleware.OpRead, "/cfg/a/b", middleware.Allow},
		{"braces", []middleware.Permission{rule(middleware.Deny, "r", "/{a,b}/*.txt")}, middleware.OpRead, "/b/x.txt", middleware.Deny},
		{"question mark", []middleware.Permission{rule(middleware.Deny, "r", "/f?.txt")}, middleware.OpRead, "/f1.txt", middleware.Deny},
		{"boundary", []middleware.Permission{rule(middleware.Deny, "r", "/secret/**")}, middleware.OpRead, "/secrets/x", middleware.Allow},
	}
	for _, tt := range tests {
		ps := compile(t, tt.rules...)
		assert.Equal(t, tt.want, ps.Check(tt.op, tt.path), tt.name)
	}

	for _, bad := range []middleware.Permission{
		rule(middleware.Deny, "r", "relative/**"),
		rule(middleware.Deny, "r", "/a/../b"),
		rule(middleware.Deny, "r", `/a\..\b`),
		rule(middleware.Deny, "r", "/~/x"),
		rule(middleware.Deny, "", "/x"),
		{Operations: []middleware.Operation{"exec"}, Paths: []string{"/x"}},
		{Operations: []middleware.Operation{"read"}, Paths: []string{"/x"}, Mode: "maybe"},
		rule(middleware.Deny, "r"),
		rule(middleware.Deny, "r", "/"+strings.Repeat("{a,b,c}", 8)),
	} {
		_, err := middleware.CompilePermissions([]middleware.Permission{bad})
		assert.ErrorIs(t, err, middleware.ErrInvalidPermission, "%+v", bad)
		_, err = middleware.NewFilesystem(middleware.FilesystemOptions{Permissions: []middleware.Permission{bad}})
		assert.Error(t, err)
	}
}

// Case 49: delete geometry.
func TestDeleteGeometry(t *testing.T) {
	tests := []struct {
		name   string
		rules  []middleware.Permission
		target string
		leaf   bool
		want   []string
	}{
		{"sibling log glob allows a file", []middleware.Permission{rule(middleware.Deny, "w", "/work/*.log")}, "/work/notes.txt", false, nil},
		{"dir glob blocks a child of a match", []middleware.Permission{rule(middleware.Deny, "w", "/work/*")}, "/work/app/child", false, []string{"/work/*"}},
		{"literal inside the subtree", []middleware.Permission{rule(middleware.Deny, "w", "/work/keep.txt")}, "/work", false, []string{"/work/keep.txt"}},
		{"literal ancestor", []middleware.Permission{rule(middleware.Deny, "w", "/work")}, "/work/sub/x", false, []string{"/work"}},
		{"literal unrelated", []middleware.Permission{rule(middleware.Deny, "w", "/secret")}, "/secrets", false, nil},
		{"anchor inside target", []middleware.Permission{rule(middleware.Deny, "w", "/work/app/**/*.go")}, "/work", false, []string{"/work/app/**/*.go"}},
		{"root anchor blocks all", []middleware.Permission{rule(middleware.Deny, "w", "/**/*.pem")}, "/anything", false, []string{"/**/*.pem"}},
		{"deep wildcard under anchor", []middleware.Permission{rule(middleware.Deny, "w", "/work/*/secrets")}, "/work/app", false, []string{"/work/*/secrets"}},
		{"allow cannot vouch for a subtree", []middleware.Permission{rule(middleware.Allow, "w", "/workspace/**"), rule(middleware.Deny, "w", "/**")}, "/workspace/dir", false, []string{"/**"}},
		{"confirmed leaf: first match allows", []middleware.Permission{rule(middleware.Allow, "w", "/workspace/**"), rule(middleware.Deny, "w", "/**")}, "/workspace/a.txt", true, nil},
		{"confirmed leaf: deny", []middleware.Permission{rule(middleware.Deny, "w", "/workspace/*.txt", "/x")}, "/workspace/a.txt", true, []string{"/workspace/*.txt"}},
		{"read rules do not matter", []middleware.Permission{rule(middleware.Deny, "r", "/**")}, "/a", false, nil},
		{"dedupe", []middleware.Permission{rule(middleware.Deny, "w", "/a/**"), rule(middleware.Deny, "w", "/a/**")}, "/a", false, []string{"/a/**"}},
	}
	for _, tt := range tests {
		ps := compile(t, tt.rules...)
		assert.Equal(t, tt.want, middleware.DeleteDenyPatterns(ps, tt.target, !tt.leaf), tt.name)
	}

	// Through the tool: the backend decides whether the target is a leaf.
	perms := []middleware.Permission{rule(middleware.Allow, "w", "/workspace/**"), rule(middleware.Deny, "w", "/**")}
	mw := newMW(t, middleware.FilesystemOptions{Permissions: perms})
	fs := files("/workspace/a.txt", "a", "/workspace/dir/b.txt", "b", "/work/x.log", "l", "/work/notes.txt", "n")
	s := drive(t, mw, fs, []llm.ToolCall{
		call("leaf", "delete", map[string]any{"file_path": "/workspace/a.txt"}),
		call("dir", "delete", map[string]any{"file_path": "/workspace/dir"}),
	})
	out, isErr := s.text(t, "leaf")
	assert.False(t, isErr)
	assert.Equal(t, "Deleted /workspace/a.txt", out)
	out, isErr = s.text(t, "dir")
	assert.True(t, isErr)
	assert.Equal(t, "Error: permission denied for write on /workspace/dir (matches deny rule(s): /**)", out)

	logs := newMW(t, middleware.FilesystemOptions{Permissions: []middleware.Permission{rule(middleware.Deny, "w", "/work/*.log")}})
	s = drive(t, logs, fs, []llm.ToolCall{
		call("n", "delete", map[string]any{"file_path": "/work/notes.txt"}),
		call("l", "delete", map[string]any{"file_path": "/work/x.log"}),
		call("w", "delete", map[string]any{"file_path": "/work"}),
	})
	out, _ = s.text(t, "n")
	assert.Equal(t, "Deleted /work/notes.txt", out)
	out, _ = s.text(t, "l")
	assert.Equal(t, "Error: permission denied for write on /work/x.log (matches deny rule(s): /work/*.log)", out)
	out, _ = s.text(t, "w")
	assert.Equal(t, "Error: permission denied for write on /work (matches deny rule(s): /work/*.log)", out, "a recursive delete of a directory holding a denied file is refused")
}

func argsCall(name string, args string) llm.ToolCall {
	return llm.ToolCall{ID: "x", Name: name, Args: []byte(args)}
}

// Case 50: interrupt rules become human-in-the-loop entries.
func TestInterruptOn(t *testing.T) {
	assert.Nil(t, compile(t).InterruptOn())
	assert.Nil(t, compile(t, rule(middleware.Deny, "rw", "/**")).InterruptOn())

	writeOnly := compile(t, rule(middleware.Interrupt, "w", "/secrets/**")).InterruptOn()
	var names []string
	for n := range writeOnly {
		names = append(names, n)
	}
	assert.ElementsMatch(t, []string{"write_file", "edit_file", "delete"}, names, "only tools whose operation is covered")
	assert.Equal(t, middleware.AllDecisions, writeOnly["write_file"].AllowedDecisions)

	io := compile(t, rule(middleware.Deny, "r", "/secrets/deny.txt"), rule(middleware.Interrupt, "rw", "/secrets/**")).InterruptOn()
	assert.Len(t, io, 7)
	tests := []struct {
		tool, args string
		want       bool
	}{
		// exact scope
		{"read_file", `{"file_path":"/secrets/a.txt"}`, true},
		{"read_file", `{"file_path":"/secrets/deny.txt"}`, false},
		{"read_file", `{"file_path":"/public/a.txt"}`, false},
		{"read_file", `{"file_path":"/secrets"}`, false},
		{"read_file", `{"file_path":42}`, false},
		{"read_file", `{"file_path":"/secrets/../x"}`, false},
		{"write_file", `{"file_path":"secrets/a.txt","content":""}`, true},
		{"edit_file", `{"file_path":"/secrets/.env"}`, true},
		// bulk scope
		{"ls", `{"path":"/"}`, true},
		{"ls", `{"path":"/secrets"}`, true},
		{"ls", `{"path":"/secrets/sub"}`, true},
		{"ls", `{"path":"/secret"}`, false},
		{"ls", `{"path":"/public"}`, false},
		{"ls", `{}`, true},
		{"ls", `{"path":null}`, true},
		{"ls", `{"path":7}`, false},
		{"ls", `{"path":"/../x"}`, false},
		{"grep", `{"pattern":"x","path":"."}`, true},
		{"grep", `{"pattern":"x","path":""}`, true},
		{"grep", `{"pattern":"x","path":"./"}`, true},
		{"grep", `{"pattern":"x","path":"/."}`, true},
		{"grep", `{"pattern":"x"}`, true},
		{"grep", `{"pattern":"x","path":"/public"}`, false},
		{"delete", `{"file_path":"/"}`, true},
		{"delete", `{"file_path":"/secrets/a"}`, true},
		{"delete", `{"file_path":"/public/a"}`, false},
		// glob patterns
		{"glob", `{"pattern":"/secrets/**","path":"/public"}`, true},
		{"glob", `{"pattern":"/public/*.txt","path":"/public"}`, false},
		{"glob", `{"pattern":"../secrets/*","path":"/public"}`, true},
		{"glob", `{"pattern":"*.txt","path":"/public"}`, false},
		{"glob", `{"pattern":"*.txt"}`, true},
	}
	for _, tt := range tests {
		cfg := io[tt.tool]
		require.NotNil(t, cfg, tt.tool)
		assert.Equal(t, tt.want, cfg.When(argsCall(tt.tool, tt.args), &agent.State{}), "%s %s", tt.tool, tt.args)
	}

	// The entries merge under the caller's.
	merged := middleware.MergeInterruptOn(writeOnly, middleware.InterruptOn{"write_file": nil})
	assert.Nil(t, merged["write_file"], "the caller's entry wins")
	assert.NotNil(t, merged["edit_file"])

	// Interrupt is not a denial at tool level.
	mw := newMW(t, middleware.FilesystemOptions{Permissions: []middleware.Permission{rule(middleware.Interrupt, "w", "/secrets/**")}})
	s := drive(t, mw, nil, []llm.ToolCall{call("w", "write_file", map[string]any{"file_path": "/secrets/a", "content": "x"})})
	out, isErr := s.text(t, "w")
	assert.False(t, isErr)
	assert.Equal(t, "Updated file /secrets/a", out)
}

// Case 51: permissions with a backend that runs commands.
func TestPermissionsWithExecution(t *testing.T) {
	perms := []middleware.Permission{rule(middleware.Deny, "w", "/memories/**")}
	shell := newShellBackend(t)
	_, err := middleware.NewFilesystem(middleware.FilesystemOptions{Backend: shell, Permissions: perms})
	assert.True(t, errors.Is(err, middleware.ErrPermissionsNeedRoutes), "%v", err)

	routed, err := backend.NewComposite(shell, []backend.Route{{Prefix: "/memories/", Backend: backend.NewState()}}, backend.CompositeOptions{})
	require.NoError(t, err)
	_, err = middleware.NewFilesystem(middleware.FilesystemOptions{Backend: routed, Permissions: perms})
	assert.NoError(t, err, "all rule paths are under routes")
	_, err = middleware.NewFilesystem(middleware.FilesystemOptions{Backend: routed, Permissions: append(perms, rule(middleware.Deny, "r", "/etc/**"))})
	assert.ErrorIs(t, err, middleware.ErrPermissionsNeedRoutes)

	plain, err := backend.NewComposite(backend.NewState(), []backend.Route{{Prefix: "/memories/", Backend: backend.NewState()}}, backend.CompositeOptions{})
	require.NoError(t, err)
	_, err = middleware.NewFilesystem(middleware.FilesystemOptions{Backend: plain, Permissions: append(perms, rule(middleware.Deny, "r", "/etc/**"))})
	assert.NoError(t, err, "a composite whose default cannot execute accepts any rules")

	_, err = middleware.NewFilesystem(middleware.FilesystemOptions{Backend: shell})
	assert.NoError(t, err, "no rules, no conflict")
}

package middleware

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/backend"
	"github.com/dageval/dageval/harness/llm"
)

// Operation is what a file tool does to a path.
type Operation string

// Operations. ls, read_file, glob and grep read; write_file, edit_file and
// delete write. execute is not covered by permissions.
const (
	OpRead  Operation = "read"
	OpWrite Operation = "write"
)

// PermissionMode is what a matching rule decides.
type PermissionMode string

// Permission modes. Interrupt lets the call through at tool level but asks a
// human first (see PermissionSet.InterruptOn).
const (
	Allow     PermissionMode = "allow"
	Deny      PermissionMode = "deny"
	Interrupt PermissionMode = "interrupt"
)

// Permission is one filesystem rule: for the listed operations, paths
// matching any of the globs get Mode (Allow when empty).
//
// Paths are absolute globs: "*" and "?" within a segment, "**" across
// segments, "{a,b}" alternatives. Unlike file-tool globs, wildcards match
// names starting with "." — "/secrets/**" covers "/secrets/.env" — because
// a rule that silently skipped dot-files would leak exactly the files
// people protect. "/secrets/**" does not match "/secrets" itself.
type Permission struct {
	Operations []Operation    `json:"operations"`
	Paths      []string       `json:"paths"`
	Mode       PermissionMode `json:"mode,omitempty"`
}

// PermissionSet is a validated, compiled list of rules. The first rule (in
// order) whose operations include the operation and whose paths match
// decides; no match allows.
type PermissionSet struct {
	rules []rule
}

type rule struct {
	ops      []Operation
	raw      []string
	patterns []*backend.Pattern
	mode     PermissionMode
}

// ErrInvalidPermission wraps every rule validation failure.
var ErrInvalidPermission = errors.New("invalid filesystem permission")

// CompilePermissions validates and compiles rules. Each path must start
// with "/" and contain neither ".." nor "~" components.
func CompilePermissions(perms []Permission) (*PermissionSet, error) {
	ps := &PermissionSet{}
	for i, p := range perms {
		where := fmt.Sprintf("permission %d", i)
		if len(p.Operations) == 0 {
			return nil, fmt.Errorf("%w: %s: operations is empty; list \"read\" and/or \"write\"", ErrInvalidPermission, where)
		}
		for _, op := range p.Operations {
			if op != OpRead && op != OpWrite {
				return nil, fmt.Errorf("%w: %s: operation %q is not \"read\" or \"write\"", ErrInvalidPermission, where, op)
			}
		}
		mode := p.Mode
		if mode == "" {
			mode = Allow
		}
		if mode != Allow && mode != Deny && mode != Interrupt {
			return nil, fmt.Errorf("%w: %s: mode %q is not allow, deny or interrupt", ErrInvalidPermission, where, p.Mode)
		}
		if len(p.Paths) == 0 {
			return nil, fmt.Errorf("%w: %s: paths is empty", ErrInvalidPermission, where)
		}
		r := rule{ops: slices.Clone(p.Operations), mode: mode}
		for _, raw := range p.Paths {
			if !strings.HasPrefix(raw, "/") {
				return nil, fmt.Errorf("%w: %s: path %q must start with /", ErrInvalidPermission, where, raw)
			}
			for seg := range strings.SplitSeq(strings.ReplaceAll(raw, `\`, "/"), "/") {
				switch seg {
				case "..":
					return nil, fmt.Errorf("%w: %s: path %q must not contain '..'", ErrInvalidPermission, where, raw)
				case "~":
					return nil, fmt.Errorf("%w: %s: path %q: '~' (home directory) paths are not supported", ErrInvalidPermission, where, raw)
				}
			}
			pat, err := backend.CompilePattern(raw, backend.PatternOptions{Dot: true})
			if err != nil {
				return nil, fmt.Errorf("%w: %s: path %q: %v", ErrInvalidPermission, where, raw, err)
			}
			r.raw = append(r.raw, raw)
			r.patterns = append(r.patterns, pat)
		}
		ps.rules = append(ps.rules, r)
	}
	return ps, nil
}

// Empty reports whether there are no rules.
func (ps *PermissionSet) empty() bool { return ps == nil || len(ps.rules) == 0 }

// matched returns the patterns of r that match p.
func (r *rule) matched(p string) []string {
	var out []string
	for i, pat := range r.patterns {
		if pat.Match(p) {
			out = append(out, r.raw[i])
		}
	}
	return out
}

// Check returns the decision for op on the (validated) path p.
func (ps *PermissionSet) Check(op Operation, p string) PermissionMode {
	if ps == nil {
		return Allow
	}
	for i := range ps.rules {
		r := &ps.rules[i]
		if !slices.Contains(r.ops, op) {
			continue
		}
		for _, pat := range r.patterns {
			if pat.Match(p) {
				return r.mode
			}
		}
	}
	return Allow
}

// deleteDenyPatterns returns the deny-write patterns that block deleting
// target, or none when the delete is allowed. For a confirmed leaf (a plain
// file) the first matching write rule decides, as for write_file. When the
// target may have descendants, every deny-write pattern that could match
// the target or anything below it blocks, whatever the rule order — an
// earlier allow cannot vouch for a whole subtree. A wildcard pattern
// anchored above the target blocks only when it could match the target,
// one of its ancestors below the anchor, or its descendants: deny
// "/work/*.log" lets "/work/notes.txt" go, deny "/work/*" blocks
// "/work/app/child".
func (ps *PermissionSet) deleteDenyPatterns(target string, hasDescendants bool) []string {
	if ps == nil {
		return nil
	}
	if !hasDescendants {
		for i := range ps.rules {
			r := &ps.rules[i]
			if !slices.Contains(r.ops, OpWrite) {
				continue
			}
			if m := r.matched(target); len(m) > 0 {
				if r.mode == Deny {
					return m
				}
				return nil
			}
		}
		return nil
	}
	var out []string
	seen := map[string]bool{}
	for i := range ps.rules {
		r := &ps.rules[i]
		if r.mode != Deny || !slices.Contains(r.ops, OpWrite) {
			continue
		}
		for k, raw := range r.raw {
			if seen[raw] {
				continue
			}
			anchor := backend.GlobAnchor(raw)
			var overlaps bool
			if backend.HasWildcard(raw) {
				overlaps = wildcardDeleteOverlap(r.patterns[k], raw, anchor, target)
			} else {
				overlaps = backend.PathsOverlap(target, anchor)
			}
			if overlaps {
				seen[raw] = true
				out = append(out, raw)
			}
		}
	}
	return out
}

func segments(p string) []string {
	p = strings.Trim(p, "/")
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}

func wildcardDeleteOverlap(pat *backend.Pattern, raw, anchor, target string) bool {
	if anchor == "/" || pat.Match(target) || backend.IsUnder(anchor, target) {
		return true
	}
	if !backend.IsUnder(target, anchor) {
		return false
	}
	anchorSegs, patSegs, targetSegs := segments(anchor), segments(raw), segments(target)
	suffix := patSegs[len(anchorSegs):]
	if len(suffix) != 1 || strings.Contains(suffix[0], "**") {
		return true
	}
	for depth := len(anchorSegs); depth < len(targetSegs); depth++ {
		if pat.Match("/" + strings.Join(targetSegs[:depth], "/")) {
			return true
		}
	}
	return false
}

// hasDescendants decides whether deleting target may remove more than one
// file, asking the backend; when unsure it answers true.
func hasDescendants(ctx context.Context, b backend.Backend, target string) bool {
	entries, err := b.Ls(ctx, target)
	if err != nil {
		return !errors.Is(err, backend.ErrNotADirectory)
	}
	if len(entries) > 0 {
		return true
	}
	parent := target[:strings.LastIndexByte(target, '/')+1]
	if parent != "/" {
		parent = strings.TrimSuffix(parent, "/")
	}
	siblings, err := b.Ls(ctx, parent)
	if err != nil {
		return true
	}
	for _, e := range siblings {
		if e.Path == target {
			return e.IsDir
		}
	}
	return true
}

// fsToolOps maps the file tools to the operation permissions see.
var fsToolOps = map[string]Operation{
	ToolLs: OpRead, ToolReadFile: OpRead, ToolGlob: OpRead, ToolGrep: OpRead,
	ToolWriteFile: OpWrite, ToolEditFile: OpWrite, ToolDelete: OpWrite,
}

// InterruptOn turns interrupt-mode rules into human-in-the-loop entries, one
// per file tool whose operation some interrupt rule covers, each allowing
// every decision and firing only for calls that touch a protected path:
//
//   - read_file, write_file, edit_file fire when file_path is valid and the
//     rules (first match) say Interrupt — a deny listed earlier wins;
//   - ls, glob, grep (path) and delete (file_path) fire when the argument is
//     missing or null, or when the path overlaps the directory anchor of an
//     interrupt rule ("." and "" mean "/"); glob also fires for an absolute
//     pattern whose anchor overlaps one, or a relative pattern with "..".
//
// Non-string or invalid paths never fire (the tool refuses them anyway).
// Without interrupt rules the result is nil.
func (ps *PermissionSet) InterruptOn() InterruptOn {
	if ps == nil {
		return nil
	}
	anchors := map[Operation][]string{}
	for i := range ps.rules {
		r := &ps.rules[i]
		if r.mode != Interrupt {
			continue
		}
		for _, op := range r.ops {
			for _, raw := range r.raw {
				a := backend.GlobAnchor(raw)
				if !slices.Contains(anchors[op], a) {
					anchors[op] = append(anchors[op], a)
				}
			}
		}
	}
	if len(anchors) == 0 {
		return nil
	}
	out := InterruptOn{}
	for _, name := range []string{ToolLs, ToolReadFile, ToolWriteFile, ToolEditFile, ToolDelete, ToolGlob, ToolGrep} {
		op := fsToolOps[name]
		if len(anchors[op]) == 0 {
			continue
		}
		var when func(llm.ToolCall, *agent.State) bool
		switch name {
		case ToolReadFile, ToolWriteFile, ToolEditFile:
			when = func(call llm.ToolCall, _ *agent.State) bool {
				p, present, ok := stringArg(call.Args, "file_path")
				if !present || !ok {
					return false
				}
				v, err := backend.ValidatePath(p)
				return err == nil && ps.Check(op, v) == Interrupt
			}
		default:
			key := "path"
			if name == ToolDelete {
				key = "file_path"
			}
			opAnchors := anchors[op]
			isGlob := name == ToolGlob
			when = func(call llm.ToolCall, _ *agent.State) bool {
				if isGlob {
					if pat, present, ok := stringArg(call.Args, "pattern"); present && ok {
						if strings.HasPrefix(pat, "/") {
							if overlapsAny(backend.GlobAnchor(pat), opAnchors) {
								return true
							}
						} else if slices.Contains(strings.Split(strings.ReplaceAll(pat, `\`, "/"), "/"), "..") {
							return true
						}
					}
				}
				p, present, ok := stringArg(call.Args, key)
				if !present {
					return true
				}
				if !ok {
					return false
				}
				v, err := backend.ValidatePath(p)
				return err == nil && overlapsAny(v, opAnchors)
			}
		}
		out[name] = &InterruptOnConfig{AllowedDecisions: slices.Clone(AllDecisions), When: when}
	}
	return out
}

func overlapsAny(p string, anchors []string) bool {
	for _, a := range anchors {
		if backend.PathsOverlap(p, a) {
			return true
		}
	}
	return false
}

// stringArg reads a string argument. present is false when the key is
// missing or null; ok is false when it is present but not a string.
func stringArg(args json.RawMessage, key string) (v string, present, ok bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(args, &m) != nil {
		return "", false, false
	}
	raw, found := m[key]
	if !found || string(raw) == "null" {
		return "", false, false
	}
	if json.Unmarshal(raw, &v) != nil {
		return "", true, false
	}
	return v, true, true
}

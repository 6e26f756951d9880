package backend

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
)

// Route mounts a backend at a path prefix of a Composite.
type Route struct {
	// Prefix is where the backend appears ("/memories/"); it is normalised
	// to a clean absolute path ending in "/".
	Prefix  string
	Backend Backend
}

// CompositeOptions configure a Composite.
type CompositeOptions struct {
	// ArtifactsRoot is where middleware keep artifacts ("/" when empty),
	// e.g. "/scratch" puts large tool results under /scratch/large_tool_results.
	ArtifactsRoot string
}

// Composite presents several backends as one tree: a path goes to the
// route with the longest matching prefix (component-wise: "/memories2/x"
// is not under "/memories/"), with the prefix replaced by "/", and to the
// default backend otherwise. Listings and searches that span routes are
// merged. Command execution, when the default backend can execute, runs
// there.
type Composite struct {
	def       Backend
	routes    []mount // insertion order
	sorted    []mount // longest prefix first
	artifacts string
}

type mount struct {
	prefix string // ends with "/"
	dir    string // prefix without the trailing "/"
	b      Backend
}

// NewComposite mounts routes over def.
func NewComposite(def Backend, routes []Route, opts CompositeOptions) (*Composite, error) {
	if def == nil {
		return nil, errors.New("backend: composite needs a default backend")
	}
	c := &Composite{def: def, artifacts: "/"}
	seen := map[string]bool{}
	for i, r := range routes {
		if r.Backend == nil {
			return nil, fmt.Errorf("backend: composite route %d (%q) has no backend", i, r.Prefix)
		}
		if !strings.HasPrefix(r.Prefix, "/") {
			return nil, fmt.Errorf("backend: composite route %d prefix %q must start with /", i, r.Prefix)
		}
		dir, err := ValidatePath(r.Prefix)
		if err != nil {
			return nil, fmt.Errorf("backend: composite route %d prefix %q: %w", i, r.Prefix, err)
		}
		if dir == "/" {
			return nil, fmt.Errorf("backend: composite route %d prefix %q would hide the default backend; pass that backend as the default instead", i, r.Prefix)
		}
		if seen[dir] {
			return nil, fmt.Errorf("backend: composite route prefix %q appears twice", dir+"/")
		}
		seen[dir] = true
		c.routes = append(c.routes, mount{prefix: dir + "/", dir: dir, b: r.Backend})
	}
	c.sorted = slices.Clone(c.routes)
	slices.SortStableFunc(c.sorted, func(a, b mount) int { return len(b.prefix) - len(a.prefix) })
	if opts.ArtifactsRoot != "" {
		root, err := ValidatePath(opts.ArtifactsRoot)
		if err != nil {
			return nil, fmt.Errorf("backend: composite artifacts root: %w", err)
		}
		c.artifacts = root
	}
	return c, nil
}

// Default returns the default backend.
func (c *Composite) Default() Backend { return c.def }

// Routes returns the routes in the order given, with normalised prefixes.
func (c *Composite) Routes() []Route {
	out := make([]Route, len(c.routes))
	for i, m := range c.routes {
		out[i] = Route{Prefix: m.prefix, Backend: m.b}
	}
	return out
}

// ArtifactsRoot returns the directory for middleware artifacts.
func (c *Composite) ArtifactsRoot() string { return c.artifacts }

// CanExecute reports whether the default backend can run commands.
func (c *Composite) CanExecute() bool { return CanExecute(c.def) }

// Resolve returns the backend serving p and the path it has there.
func (c *Composite) Resolve(p string) (Backend, string, error) {
	v, err := ValidatePath(p)
	if err != nil {
		return nil, "", err
	}
	m, inner := c.route(v)
	if m == nil {
		return c.def, v, nil
	}
	return m.b, inner, nil
}

// route finds the mount for a clean absolute path; nil means the default.
func (c *Composite) route(v string) (*mount, string) {
	for i := range c.sorted {
		m := &c.sorted[i]
		if v == m.dir {
			return m, "/"
		}
		if strings.HasPrefix(v, m.prefix) {
			return m, "/" + v[len(m.prefix):]
		}
	}
	return nil, v
}

// shadowed reports whether a default-backend path is hidden by a route.
func (c *Composite) shadowed(p string) bool {
	m, _ := c.route(path.Clean("/" + p))
	return m != nil
}

// owns reports whether the composite path p is served by m (and not by a
// longer route nested inside it).
func (c *Composite) owns(m *mount, p string) bool {
	r, _ := c.route(path.Clean("/" + p))
	return r != nil && r.prefix == m.prefix
}

// outer maps a path reported by a routed backend back into the composite.
func (m *mount) outer(inner string) string {
	if inner == "/" {
		return m.prefix
	}
	return m.dir + inner
}

// outerErr rewrites a routed backend's error to name the caller's path.
func outerErr(err error, inner, outer string) error {
	var e *Error
	if err == nil || inner == outer || !errors.As(err, &e) {
		return err
	}
	c := *e
	c.Msg = strings.ReplaceAll(e.Msg, "'"+inner+"'", "'"+outer+"'")
	if e.Path == inner {
		c.Path = outer
	}
	c.Err = err
	return &c
}

// mountsUnder lists the routes strictly below dir, in insertion order.
func (c *Composite) mountsUnder(dir string) []*mount {
	var out []*mount
	for i := range c.routes {
		m := &c.routes[i]
		if m.dir != dir && IsUnder(m.dir, dir) {
			out = append(out, m)
		}
	}
	return out
}

// Ls implements Backend. Listing a directory above routes shows each route
// (or the directory leading to it) as a subdirectory; entries hidden by a
// route are left out.
func (c *Composite) Ls(ctx context.Context, p string) ([]FileInfo, error) {
	v, err := ValidatePath(p)
	if err != nil {
		return nil, err
	}
	m, inner := c.route(v)
	b := c.def
	if m != nil {
		b = m.b
	}
	below := c.mountsUnder(v)
	entries, err := b.Ls(ctx, inner)
	if err != nil {
		if len(below) == 0 || !errors.Is(err, ErrFileNotFound) {
			if m != nil {
				for i := range entries {
					entries[i].Path = m.outer(entries[i].Path)
				}
			}
			return entries, outerErr(err, inner, v)
		}
		entries = nil
	}
	var out []FileInfo
	have := map[string]bool{}
	for _, e := range entries {
		if m != nil {
			e.Path = m.outer(e.Path)
		}
		owner, _ := c.route(path.Clean(e.Path))
		if owner != nil && (m == nil || owner.prefix != m.prefix) {
			continue // hidden by a deeper route
		}
		have[e.Path] = true
		out = append(out, e)
	}
	prefix := dirPrefix(v)
	for _, sub := range below {
		rest := strings.TrimPrefix(sub.prefix, prefix)
		child := prefix + rest[:strings.IndexByte(rest, '/')+1]
		if !have[child] {
			have[child] = true
			out = append(out, FileInfo{Path: child, IsDir: true})
		}
	}
	slices.SortFunc(out, func(a, b FileInfo) int { return strings.Compare(a.Path, b.Path) })
	return out, nil
}

// Read implements Backend.
func (c *Composite) Read(ctx context.Context, p string, offset, limit int) (ReadResult, error) {
	b, inner, err := c.Resolve(p)
	if err != nil {
		return ReadResult{}, err
	}
	res, err := b.Read(ctx, inner, offset, limit)
	return res, outerErr(err, inner, path.Clean("/"+p))
}

// Write implements Backend.
func (c *Composite) Write(ctx context.Context, p, content string) error {
	b, inner, err := c.Resolve(p)
	if err != nil {
		return err
	}
	return outerErr(b.Write(ctx, inner, content), inner, path.Clean("/"+p))
}

// Edit implements Backend.
func (c *Composite) Edit(ctx context.Context, req EditRequest) (int, error) {
	b, inner, err := c.Resolve(req.Path)
	if err != nil {
		return 0, err
	}
	outer := path.Clean("/" + req.Path)
	req.Path = inner
	n, err := b.Edit(ctx, req)
	return n, outerErr(err, inner, outer)
}

// Delete implements Deleter. Routes whose backend cannot delete answer
// Unsupported, and so does a default-backend directory that holds a route.
func (c *Composite) Delete(ctx context.Context, p string) error {
	v, err := ValidatePath(p)
	if err != nil {
		return err
	}
	m, inner := c.route(v)
	b := c.def
	if m != nil {
		b = m.b
	} else if below := c.mountsUnder(v); len(below) > 0 {
		return errf(Unsupported, v, "'%s' contains the mounted directory '%s'; delete inside it instead", v, below[0].prefix)
	}
	d, ok := b.(Deleter)
	if !ok {
		return errf(Unsupported, v, "deletion is not supported for '%s'", v)
	}
	return outerErr(d.Delete(ctx, inner), inner, v)
}

// Glob implements Backend; matches from every backend under path are
// merged and sorted by path.
func (c *Composite) Glob(ctx context.Context, pattern, p string) (GlobResult, error) {
	root, err := searchRoot(p)
	if err != nil {
		return GlobResult{}, err
	}
	if m, inner := c.route(root); m != nil {
		res, err := m.b.Glob(ctx, pattern, inner)
		for i := range res.Matches {
			res.Matches[i].Path = m.outer(res.Matches[i].Path)
		}
		sortByPath(res.Matches)
		return res, outerErr(err, inner, root)
	}
	pat, err := compileSearchGlob(pattern)
	if err != nil {
		return GlobResult{}, err
	}
	var out GlobResult
	seen := map[string]bool{}
	add := func(fi FileInfo) {
		if !seen[fi.Path] {
			seen[fi.Path] = true
			out.Matches = append(out.Matches, fi)
		}
	}
	res, err := c.def.Glob(ctx, pattern, p)
	for _, fi := range res.Matches {
		if !c.shadowed(fi.Path) {
			add(fi)
		}
	}
	out.Truncated = res.Truncated
	if err != nil {
		sortByPath(out.Matches)
		return out, err
	}
	for _, m := range c.mountsUnder(root) {
		for _, sub := range pat.derive(relTo(root, m.dir)) {
			res, err := m.b.Glob(ctx, sub, "/")
			out.Truncated = out.Truncated || res.Truncated
			for _, fi := range res.Matches {
				fi.Path = m.outer(fi.Path)
				if c.owns(m, fi.Path) && pat.Match(relTo(root, fi.Path)) {
					add(fi)
				}
			}
			if err != nil {
				sortByPath(out.Matches)
				return out, err
			}
		}
	}
	sortByPath(out.Matches)
	return out, nil
}

func sortByPath(fs []FileInfo) {
	slices.SortFunc(fs, func(a, b FileInfo) int { return strings.Compare(a.Path, b.Path) })
}

// Grep implements Backend. Searching above routes searches the default
// backend first, then each route in the order given, sharing MaxCount.
func (c *Composite) Grep(ctx context.Context, req GrepRequest) (GrepResult, error) {
	root, err := searchRoot(req.Path)
	if err != nil {
		return GrepResult{}, err
	}
	if m, inner := c.route(root); m != nil {
		r := req
		r.Path = inner
		res, err := m.b.Grep(ctx, r)
		for i := range res.Matches {
			res.Matches[i].Path = m.outer(res.Matches[i].Path)
		}
		return res, outerErr(err, inner, root)
	}
	var include *Pattern
	if req.Glob != "" {
		if include, err = compileSearchGlob(req.Glob); err != nil {
			return GrepResult{}, err
		}
	}
	var out GrepResult
	res, err := c.def.Grep(ctx, req)
	for _, gm := range res.Matches {
		if !c.shadowed(gm.Path) {
			out.Matches = append(out.Matches, gm)
		}
	}
	out.Truncated = res.Truncated
	if err != nil || out.Truncated {
		return out, err
	}
	for _, m := range c.mountsUnder(root) {
		remaining := 0
		if req.MaxCount > 0 {
			remaining = req.MaxCount - len(out.Matches)
		}
		r := GrepRequest{Pattern: req.Pattern, Path: "/", MaxCount: remaining}
		if req.MaxCount > 0 && remaining <= 0 {
			// The budget is spent: only whether this route has one more
			// match matters (exactly MaxCount matches is not truncation).
			r.MaxCount = 1
		}
		filter := false
		if include != nil {
			switch subs := include.derive(relTo(root, m.dir)); {
			case len(subs) == 0:
				continue
			case len(subs) == 1:
				r.Glob = subs[0] // anchored at the route root when it has a "/"
			default:
				filter, r.MaxCount = true, 0
			}
		}
		res, err := m.b.Grep(ctx, r)
		for _, gm := range res.Matches {
			gm.Path = m.outer(gm.Path)
			if !c.owns(m, gm.Path) || filter && !include.Match(relTo(root, gm.Path)) {
				continue
			}
			if req.MaxCount > 0 && len(out.Matches) >= req.MaxCount {
				out.Truncated = true
				break
			}
			out.Matches = append(out.Matches, gm)
		}
		out.Truncated = out.Truncated || res.Truncated
		if err != nil || out.Truncated {
			return out, err
		}
	}
	return out, nil
}

// group splits paths by serving backend, keeping input positions.
type group struct {
	b       Backend
	inner   []string
	indexes []int
}

func (c *Composite) groups(paths []string, errs []error) []*group {
	var out []*group
	byBackend := map[Backend]*group{}
	for i, p := range paths {
		b, inner, err := c.Resolve(p)
		if err != nil {
			errs[i] = err
			continue
		}
		g := byBackend[b]
		if g == nil {
			g = &group{b: b}
			byBackend[b] = g
			out = append(out, g)
		}
		g.inner = append(g.inner, inner)
		g.indexes = append(g.indexes, i)
	}
	return out
}

// Upload implements Backend: one batch per backend, results in input order.
func (c *Composite) Upload(ctx context.Context, files []UploadFile) []UploadResult {
	paths := make([]string, len(files))
	for i, f := range files {
		paths[i] = f.Path
	}
	errs := make([]error, len(files))
	out := make([]UploadResult, len(files))
	for _, g := range c.groups(paths, errs) {
		batch := make([]UploadFile, len(g.inner))
		for k, idx := range g.indexes {
			batch[k] = UploadFile{Path: g.inner[k], Content: files[idx].Content}
		}
		for k, r := range g.b.Upload(ctx, batch) {
			if k < len(g.indexes) {
				errs[g.indexes[k]] = outerErr(r.Err, g.inner[k], path.Clean("/"+files[g.indexes[k]].Path))
			}
		}
	}
	for i, f := range files {
		out[i] = UploadResult{Path: f.Path, Err: errs[i]}
	}
	return out
}

// Download implements Backend: one batch per backend, results in input order.
func (c *Composite) Download(ctx context.Context, paths []string) []DownloadResult {
	errs := make([]error, len(paths))
	out := make([]DownloadResult, len(paths))
	for i, p := range paths {
		out[i].Path = p
	}
	for _, g := range c.groups(paths, errs) {
		for k, r := range g.b.Download(ctx, g.inner) {
			if k < len(g.indexes) {
				i := g.indexes[k]
				out[i].Content = r.Content
				errs[i] = outerErr(r.Err, g.inner[k], path.Clean("/"+paths[i]))
			}
		}
	}
	for i := range out {
		out[i].Err = errs[i]
	}
	return out
}

// ID returns the default backend's execution id, or "" when it cannot execute.
func (c *Composite) ID() string {
	if e, ok := c.def.(Executor); ok && CanExecute(c.def) {
		return e.ID()
	}
	return ""
}

// Execute implements Executor by running the command on the default
// backend; it is Unsupported when that backend cannot execute.
func (c *Composite) Execute(ctx context.Context, req ExecuteRequest) (ExecuteResult, error) {
	if e, ok := c.def.(Executor); ok && CanExecute(c.def) {
		return e.Execute(ctx, req)
	}
	return ExecuteResult{}, errf(Unsupported, "", "the default backend of this composite cannot run commands")
}

package backend

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"
	"unsafe"
)

// FilesystemOptions configure a Filesystem backend. The zero value is the
// virtual mode with the default limits.
type FilesystemOptions struct {
	// HostPaths switches off virtual mode: paths are host paths (absolute,
	// or relative to the root) and results report absolute host paths.
	// Either way no path can reach outside the root.
	HostPaths bool
	// MaxFileSize is the largest file Grep reads (10 MiB when 0).
	MaxFileSize int64
	// GlobBudget and GrepBudget bound one Glob or Grep walk (5 s and 15 s
	// when 0); a walk that runs out returns what it found, Truncated.
	GlobBudget, GrepBudget time.Duration
}

// Filesystem serves files from a directory on disk.
//
// In virtual mode (the default) paths are rooted at "/", which is the root
// directory. Every operation goes through os.Root, so "..", absolute
// symlinks and symlinks that point outside the root are refused by the
// kernel-facing layer itself (no check-then-use race); ValidatePath refuses
// the hostile spellings before that.
type Filesystem struct {
	root    string // absolute, symlinks resolved
	alias   string // absolute as given (may differ from root by symlinks)
	virtual bool
	maxSize int64
	globDur time.Duration
	grepDur time.Duration
	// owner, when set, is given every file and directory Write and Upload
	// create, so that a sandbox running as another user can change them.
	owner *fileOwner
}

type fileOwner struct{ uid, gid int }

// NewFilesystem serves the directory root ("" means the working directory),
// which must exist.
func NewFilesystem(root string, opts FilesystemOptions) (*Filesystem, error) {
	if root == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, fmt.Errorf("backend: filesystem root: %w", err)
		}
		root = wd
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("backend: filesystem root %s: %w", root, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("backend: filesystem root %s: %w", root, err)
	}
	st, err := os.Stat(real)
	if err != nil {
		return nil, fmt.Errorf("backend: filesystem root %s: %w", root, err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("backend: filesystem root %s is not a directory", root)
	}
	f := &Filesystem{root: real, alias: abs, virtual: !opts.HostPaths, maxSize: opts.MaxFileSize,
		globDur: opts.GlobBudget, grepDur: opts.GrepBudget}
	if f.maxSize <= 0 {
		f.maxSize = 10 << 20
	}
	if f.globDur <= 0 {
		f.globDur = 5 * time.Second
	}
	if f.grepDur <= 0 {
		f.grepDur = 15 * time.Second
	}
	return f, nil
}

// Root returns the root directory (absolute, symlinks resolved).
func (f *Filesystem) Root() string { return f.root }

// Virtual reports whether paths are virtual ("/" is the root).
func (f *Filesystem) Virtual() bool { return f.virtual }

// resolve maps a caller's path to a root-relative slash path ("." for the
// root) and the path to report back.
func (f *Filesystem) resolve(p string) (rel, shown string, err error) {
	if f.virtual {
		v, err := ValidatePath(p)
		if err != nil {
			return "", "", err
		}
		if v == "/" {
			return ".", v, nil
		}
		return v[1:], v, nil
	}
	s, err := checkPath(p)
	if err != nil {
		return "", "", err
	}
	if s == "" {
		s = "."
	}
	if path.IsAbs(s) {
		clean := path.Clean(s)
		base := ""
		for _, r := range []string{filepath.ToSlash(f.root), filepath.ToSlash(f.alias)} {
			if IsUnder(clean, r) {
				base = r
				break
			}
		}
		if base == "" {
			return "", "", errDenied(p, fmt.Sprintf("Path '%s' is outside the root directory %s", p, f.root))
		}
		rel = strings.TrimPrefix(strings.TrimPrefix(clean, base), "/")
	} else {
		rel = path.Clean(s)
	}
	if rel == "" {
		rel = "."
	}
	return rel, f.show(rel), nil
}

// show renders a root-relative path the way results report it.
func (f *Filesystem) show(rel string) string {
	if f.virtual {
		if rel == "." {
			return "/"
		}
		return "/" + rel
	}
	if rel == "." {
		return f.root
	}
	return filepath.Join(f.root, filepath.FromSlash(rel))
}

func (f *Filesystem) open() (*os.Root, error) {
	r, err := os.OpenRoot(f.root)
	if err != nil {
		return nil, fmt.Errorf("backend: open filesystem root %s: %w", f.root, err)
	}
	return r, nil
}

// mapErr turns an os error into a backend error about the path shown.
func mapErr(shown string, err error) error {
	var be *Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &be):
		return err
	case errors.Is(err, fs.ErrNotExist):
		return &Error{Code: FileNotFound, Path: shown, Msg: fmt.Sprintf("File '%s' not found", shown), Err: err}
	case strings.Contains(err.Error(), "path escapes from parent"):
		// os.Root's error for "..", absolute symlinks and symlinks leading
		// out of the root; the sentinel is unexported.
		return &Error{Code: PermissionDenied, Path: shown, Msg: fmt.Sprintf("Path '%s' resolves outside the root directory", shown), Err: err}
	case errors.Is(err, fs.ErrPermission):
		return &Error{Code: PermissionDenied, Path: shown, Msg: fmt.Sprintf("Permission denied: '%s'", shown), Err: err}
	case errors.Is(err, syscall.EISDIR):
		return &Error{Code: IsDirectory, Path: shown, Msg: fmt.Sprintf("'%s' is a directory, not a file", shown), Err: err}
	case errors.Is(err, syscall.ENOTDIR):
		return &Error{Code: NotADirectory, Path: shown, Msg: fmt.Sprintf("'%s': a parent of this path is a file, not a directory", shown), Err: err}
	case errors.Is(err, syscall.ELOOP):
		return &Error{Code: InvalidPath, Path: shown, Msg: fmt.Sprintf("Path '%s' involves a symbolic link loop or too many links", shown), Err: err}
	case errors.Is(err, syscall.ENAMETOOLONG):
		return &Error{Code: InvalidPath, Path: shown, Msg: fmt.Sprintf("Path '%s' is too long", shown), Err: err}
	case errors.Is(err, syscall.EINVAL):
		return &Error{Code: InvalidPath, Path: shown, Msg: fmt.Sprintf("Path '%s' is not valid here", shown), Err: err}
	}
	msg := err.Error()
	var pe *fs.PathError
	if errors.As(err, &pe) {
		msg = pe.Err.Error()
	}
	return &Error{Path: shown, Msg: fmt.Sprintf("Error accessing '%s': %s", shown, msg), Err: err}
}

func modTime(fi fs.FileInfo) string { return FormatTime(fi.ModTime()) }

// Ls implements Backend. Symlinked children that resolve outside the root
// are left out; children that cannot be inspected are reported in the error
// beside the entries that could.
func (f *Filesystem) Ls(ctx context.Context, p string) ([]FileInfo, error) {
	rel, shown, err := f.resolve(p)
	if err != nil {
		return nil, err
	}
	r, err := f.open()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	st, err := r.Stat(rel)
	if err != nil {
		return nil, mapErr(shown, err)
	}
	if !st.IsDir() {
		return nil, errNotDir(shown)
	}
	d, err := r.Open(rel)
	if err != nil {
		return nil, mapErr(shown, err)
	}
	entries, err := d.ReadDir(-1)
	d.Close()
	if err != nil {
		return nil, mapErr(shown, err)
	}
	var out []FileInfo
	var problems []string
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		child := path.Join(rel, e.Name())
		fi, err := r.Stat(child)
		if err != nil {
			if e.Type()&fs.ModeSymlink != 0 {
				continue // dangling or escaping link: not part of the tree
			}
			problems = append(problems, mapErr(f.show(child), err).Error())
			continue
		}
		if fi.IsDir() {
			out = append(out, FileInfo{Path: f.show(child) + "/", IsDir: true, ModifiedAt: modTime(fi)})
		} else {
			out = append(out, FileInfo{Path: f.show(child), Size: fi.Size(), ModifiedAt: modTime(fi)})
		}
	}
	slices.SortFunc(out, func(a, b FileInfo) int { return strings.Compare(a.Path, b.Path) })
	if len(problems) > 0 {
		slices.Sort(problems)
		return out, &Error{Path: shown, Msg: strings.Join(problems, "\n")}
	}
	return out, nil
}

// readFile reads a regular file inside the root.
func (f *Filesystem) readFile(r *os.Root, rel, shown string) ([]byte, fs.FileInfo, error) {
	if rel == "." {
		return nil, nil, errIsDir(shown)
	}
	st, err := r.Stat(rel)
	if err != nil {
		return nil, nil, mapErr(shown, err)
	}
	if st.IsDir() {
		return nil, nil, errIsDir(shown)
	}
	if !st.Mode().IsRegular() {
		return nil, nil, errf(InvalidPath, shown, "'%s' is not a regular file", shown)
	}
	data, err := r.ReadFile(rel)
	if err != nil {
		return nil, nil, mapErr(shown, err)
	}
	return data, st, nil
}

// Read implements Backend. Files with a media extension or bytes that are
// not UTF-8 are returned whole, base64-encoded.
func (f *Filesystem) Read(ctx context.Context, p string, offset, limit int) (ReadResult, error) {
	rel, shown, err := f.resolve(p)
	if err != nil {
		return ReadResult{}, err
	}
	r, err := f.open()
	if err != nil {
		return ReadResult{}, err
	}
	defer r.Close()
	data, st, err := f.readFile(r, rel, shown)
	if err != nil {
		return ReadResult{}, err
	}
	stamp := modTime(st)
	if IsBinaryPath(rel) || !utf8.Valid(data) {
		return ReadResult{File: FileData{Content: base64.StdEncoding.EncodeToString(data), Encoding: EncodingBase64, ModifiedAt: stamp}}, nil
	}
	// data is never modified after this point, so the string can share its
	// memory; sliceRead copies the window it returns.
	text := unsafe.String(unsafe.SliceData(data), len(data))
	res, err := sliceRead(FileData{Content: text, Encoding: EncodingUTF8, ModifiedAt: stamp}, offset, limit)
	if strings.TrimSpace(res.File.Content) == "" {
		res.File.Content = strings.Clone(res.File.Content)
	}
	return res, err
}

// writeBytes creates parents and writes data, refusing directories.
func (f *Filesystem) writeBytes(r *os.Root, rel, shown string, data []byte) error {
	if err := prepareWrite(r, rel, shown); err != nil {
		return err
	}
	if err := r.WriteFile(rel, data, 0o644); err != nil {
		return mapErr(shown, err)
	}
	return mapErr(shown, f.chown(r, rel))
}

// prepareWrite makes the directories leading to rel and refuses a rel that
// is a directory, as writing a file there needs.
func prepareWrite(r *os.Root, rel, shown string) error {
	if rel == "." {
		return errIsDir(shown)
	}
	if dir := path.Dir(rel); dir != "." {
		if err := r.MkdirAll(dir, 0o755); err != nil {
			if errors.Is(err, fs.ErrExist) {
				return errNotDir(shown)
			}
			return mapErr(shown, err)
		}
	}
	if st, err := r.Stat(rel); err == nil && st.IsDir() {
		return errIsDir(shown)
	}
	return nil
}

// Append implements Appender. The file is opened for appending, so that
// adding to a file that keeps growing (the summarization history) costs
// the added bytes, not a read and a rewrite of the whole file.
func (f *Filesystem) Append(ctx context.Context, p, content string) error {
	rel, shown, err := f.resolve(p)
	if err != nil {
		return err
	}
	r, err := f.open()
	if err != nil {
		return err
	}
	defer r.Close()
	if err := prepareWrite(r, rel, shown); err != nil {
		return err
	}
	file, err := r.OpenFile(rel, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return mapErr(shown, err)
	}
	_, err = file.WriteString(content)
	if cerr := file.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return mapErr(shown, err)
	}
	return mapErr(shown, f.chown(r, rel))
}

// chown gives rel and the directories leading to it to the owner, if any.
func (f *Filesystem) chown(r *os.Root, rel string) error {
	if f.owner == nil {
		return nil
	}
	for p := rel; p != "."; p = path.Dir(p) {
		if err := r.Lchown(p, f.owner.uid, f.owner.gid); err != nil {
			return err
		}
	}
	return nil
}

// Write implements Backend.
func (f *Filesystem) Write(ctx context.Context, p, content string) error {
	rel, shown, err := f.resolve(p)
	if err != nil {
		return err
	}
	r, err := f.open()
	if err != nil {
		return err
	}
	defer r.Close()
	return f.writeBytes(r, rel, shown, []byte(content))
}

// Edit implements Backend. In a file with CRLF line endings, "\n" in the
// strings stands for "\r\n", so that edits written with plain newlines apply
// and the file keeps its line endings.
func (f *Filesystem) Edit(ctx context.Context, req EditRequest) (int, error) {
	rel, shown, err := f.resolve(req.Path)
	if err != nil {
		return 0, err
	}
	r, err := f.open()
	if err != nil {
		return 0, err
	}
	defer r.Close()
	data, _, err := f.readFile(r, rel, shown)
	if err != nil {
		return 0, err
	}
	if !utf8.Valid(data) {
		return 0, errf(InvalidArgument, shown, "'%s' is a binary file and cannot be edited as text", shown)
	}
	content, old, repl := string(data), req.Old, req.New
	if strings.Contains(content, "\r\n") && !strings.Contains(old, "\r") {
		old = strings.ReplaceAll(old, "\n", "\r\n")
		repl = strings.ReplaceAll(strings.ReplaceAll(repl, "\r\n", "\n"), "\n", "\r\n")
	}
	out, n, err := replaceString(content, old, repl, req.ReplaceAll)
	if err != nil {
		if old != req.Old {
			_, _, err = replaceString(content, req.Old, req.New, req.ReplaceAll)
		}
		return 0, err
	}
	return n, mapErr(shown, r.WriteFile(rel, []byte(out), 0o644))
}

// Delete implements Deleter. A symlink is removed itself, never its target;
// a directory is removed with everything under it.
func (f *Filesystem) Delete(ctx context.Context, p string) error {
	rel, shown, err := f.resolve(p)
	if err != nil {
		return err
	}
	if rel == "." {
		return errInvalid(shown, "Refusing to delete the root directory")
	}
	r, err := f.open()
	if err != nil {
		return err
	}
	defer r.Close()
	st, err := r.Lstat(rel)
	if err != nil {
		return mapErr(shown, err)
	}
	if st.IsDir() {
		return mapErr(shown, r.RemoveAll(rel))
	}
	return mapErr(shown, r.Remove(rel))
}

// walkFiles visits the regular files under the directory rel (symlinks to
// regular files inside the root included) in lexical order until the
// budget runs out; prune, when non-nil, may skip directories. read returns
// a visited file's bytes. Each directory is opened once as its own os.Root,
// so reading a file resolves one path component instead of the whole path.
func (f *Filesystem) walkFiles(ctx context.Context, r *os.Root, rel string, budget time.Duration, prune func(dirRel string) bool,
	visit func(fileRel string, fi fs.FileInfo, read func() ([]byte, error)) error) (truncated bool, err error) {
	deadline := time.Now().Add(budget)
	var problems []string
	var walk func(dir *os.Root, dirRel string) error
	walk = func(dir *os.Root, dirRel string) error {
		d, err := dir.Open(".")
		if err != nil {
			problems = append(problems, mapErr(f.show(dirRel), err).Error())
			return nil
		}
		entries, err := d.ReadDir(-1)
		d.Close()
		if err != nil {
			problems = append(problems, mapErr(f.show(dirRel), err).Error())
		}
		slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
		for _, e := range entries {
			if err := ctx.Err(); err != nil {
				return err
			}
			if time.Now().After(deadline) {
				truncated = true
				return fs.SkipAll
			}
			name := e.Name()
			child := name
			if dirRel != "." {
				child = dirRel + "/" + name
			}
			switch t := e.Type(); {
			case t.IsDir():
				if prune != nil && prune(child) {
					continue
				}
				sub, err := dir.OpenRoot(name)
				if err != nil {
					problems = append(problems, mapErr(f.show(child), err).Error())
					continue
				}
				err = walk(sub, child)
				sub.Close()
				if err != nil {
					return err
				}
			case t&fs.ModeSymlink != 0:
				// Resolve through the main root: a link may point to a
				// sibling directory, which the per-directory root refuses.
				st, err := r.Stat(child)
				if err != nil || !st.Mode().IsRegular() {
					continue
				}
				if err := visit(child, st, func() ([]byte, error) { return r.ReadFile(child) }); err != nil {
					return err
				}
			case t.IsRegular():
				fi, err := e.Info()
				if err != nil {
					continue
				}
				if err := visit(child, fi, func() ([]byte, error) { return dir.ReadFile(name) }); err != nil {
					return err
				}
			}
		}
		return nil
	}
	start, err := r.OpenRoot(rel)
	if err != nil {
		return false, mapErr(f.show(rel), err)
	}
	werr := walk(start, rel)
	start.Close()
	if werr != nil && !errors.Is(werr, fs.SkipAll) {
		return truncated, werr
	}
	if len(problems) > 0 {
		slices.Sort(problems)
		return truncated, &Error{Msg: strings.Join(problems, "\n")}
	}
	return truncated, nil
}

// searchDir resolves a Glob or Grep root; ok is false when it does not
// exist or is not a directory.
func (f *Filesystem) searchDir(r *os.Root, p string) (rel, shown string, st fs.FileInfo, err error) {
	if p == "" {
		p = "/"
		if !f.virtual {
			p = f.root
		}
	}
	rel, shown, err = f.resolve(p)
	if err != nil {
		return "", "", nil, err
	}
	st, serr := r.Stat(rel)
	if serr != nil {
		return rel, shown, nil, nil
	}
	return rel, shown, st, nil
}

func relUnder(root, p string) string {
	if root == "." {
		return p
	}
	return strings.TrimPrefix(p, root+"/")
}

// Glob implements Backend; matches are sorted by path.
func (f *Filesystem) Glob(ctx context.Context, pattern, p string) (GlobResult, error) {
	pat, err := compileSearchGlob(pattern)
	if err != nil {
		return GlobResult{}, err
	}
	r, err := f.open()
	if err != nil {
		return GlobResult{}, err
	}
	defer r.Close()
	rel, _, st, err := f.searchDir(r, p)
	if err != nil || st == nil || !st.IsDir() {
		return GlobResult{}, err
	}
	var prune func(string) bool
	if !pat.basename {
		prune = func(dir string) bool { return len(pat.derive(relUnder(rel, dir))) == 0 }
	}
	var res GlobResult
	res.Truncated, err = f.walkFiles(ctx, r, rel, f.globDur, prune, func(fileRel string, fi fs.FileInfo, _ func() ([]byte, error)) error {
		if pat.Match(relUnder(rel, fileRel)) {
			res.Matches = append(res.Matches, FileInfo{Path: f.show(fileRel), Size: fi.Size(), ModifiedAt: modTime(fi)})
		}
		return nil
	})
	slices.SortFunc(res.Matches, func(a, b FileInfo) int { return strings.Compare(a.Path, b.Path) })
	return res, err
}

// Grep implements Backend. Files larger than MaxFileSize and binary files
// (media extensions, NUL bytes, invalid UTF-8) are skipped.
func (f *Filesystem) Grep(ctx context.Context, req GrepRequest) (GrepResult, error) {
	var include *Pattern
	var err error
	if req.Glob != "" {
		if include, err = compileSearchGlob(req.Glob); err != nil {
			return GrepResult{}, err
		}
	}
	r, err := f.open()
	if err != nil {
		return GrepResult{}, err
	}
	defer r.Close()
	rel, _, st, err := f.searchDir(r, req.Path)
	if err != nil || st == nil {
		return GrepResult{}, err
	}
	var res GrepResult
	search := func(fileRel string, fi fs.FileInfo, relName string, read func() ([]byte, error)) (stop bool, err error) {
		if fi.Size() > f.maxSize || IsBinaryPath(fileRel) {
			return false, nil
		}
		if include != nil && !include.Match(relName) {
			return false, nil
		}
		data, err := read()
		if err != nil {
			return false, mapErr(f.show(fileRel), err)
		}
		if !bytes.Contains(data, []byte(req.Pattern)) || bytes.IndexByte(data, 0) >= 0 || !utf8.Valid(data) {
			return false, nil
		}
		remaining := 0
		if req.MaxCount > 0 {
			if remaining = req.MaxCount - len(res.Matches); remaining <= 0 {
				res.Truncated = true // this file holds a match beyond the cap
				return true, nil
			}
		}
		one := func(yield func(string, string) bool) { yield(f.show(fileRel), string(data)) }
		got, err := grepFiles(ctx, "/", one, req.Pattern, nil, remaining)
		res.Matches = append(res.Matches, got.Matches...)
		if err != nil {
			return true, err
		}
		if got.Truncated {
			res.Truncated = true
			return true, nil
		}
		return false, nil
	}
	if !st.IsDir() {
		_, err := search(rel, st, path.Base(rel), func() ([]byte, error) { return r.ReadFile(rel) })
		return res, err
	}
	var problems []string
	full := errors.New("stop")
	truncated, werr := f.walkFiles(ctx, r, rel, f.grepDur, nil, func(fileRel string, fi fs.FileInfo, read func() ([]byte, error)) error {
		stop, err := search(fileRel, fi, relUnder(rel, fileRel), read)
		if err != nil {
			problems = append(problems, err.Error())
		}
		if stop {
			return full
		}
		return nil
	})
	if errors.Is(werr, full) {
		werr = nil
	}
	res.Truncated = res.Truncated || truncated
	if werr == nil && len(problems) > 0 {
		werr = &Error{Msg: strings.Join(problems, "\n")}
	}
	return res, werr
}

// Upload implements Backend.
func (f *Filesystem) Upload(ctx context.Context, files []UploadFile) []UploadResult {
	out := make([]UploadResult, len(files))
	r, rerr := f.open()
	if rerr == nil {
		defer r.Close()
	}
	for i, file := range files {
		out[i].Path = file.Path
		if rerr != nil {
			out[i].Err = rerr
			continue
		}
		if err := ctx.Err(); err != nil {
			out[i].Err = err
			continue
		}
		rel, shown, err := f.resolve(file.Path)
		if err != nil {
			out[i].Err = err
			continue
		}
		out[i].Err = f.writeBytes(r, rel, shown, file.Content)
	}
	return out
}

// Download implements Backend.
func (f *Filesystem) Download(ctx context.Context, paths []string) []DownloadResult {
	out := make([]DownloadResult, len(paths))
	r, rerr := f.open()
	if rerr == nil {
		defer r.Close()
	}
	for i, p := range paths {
		out[i].Path = p
		if rerr != nil {
			out[i].Err = rerr
			continue
		}
		if err := ctx.Err(); err != nil {
			out[i].Err = err
			continue
		}
		rel, shown, err := f.resolve(p)
		if err != nil {
			out[i].Err = err
			continue
		}
		out[i].Content, _, out[i].Err = f.readFile(r, rel, shown)
	}
	return out
}

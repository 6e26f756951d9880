package backend

import (
	"context"
	"encoding/base64"
	"path"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/dageval/dageval/harness/agent"
)

// fileTable is the storage under the State and Store backends: a flat map
// from clean absolute paths to files, with directories implied by paths.
type fileTable interface {
	get(ctx context.Context, p string) (FileData, bool, error)
	put(ctx context.Context, p string, fd FileData) error
	remove(ctx context.Context, paths []string) error
	// list returns the files strictly below dir ("/" lists everything),
	// sorted by path.
	list(ctx context.Context, dir string) ([]kvFile, error)
	// hasChildren reports whether any file lies strictly below dir.
	hasChildren(ctx context.Context, dir string) (bool, error)
}

type kvFile struct {
	Path string
	Data FileData
}

// kvOps implements the Backend operations once for every fileTable.
type kvOps struct {
	table func(ctx context.Context) (fileTable, error)
}

func now(ctx context.Context) string { return FormatTime(agent.Now(ctx)) }

func dirPrefix(dir string) string {
	if dir == "/" {
		return "/"
	}
	return dir + "/"
}

func fileSize(fd FileData) int64 {
	if fd.Encoding == EncodingBase64 {
		return int64(base64.StdEncoding.DecodedLen(len(fd.Content)) - strings.Count(fd.Content, "="))
	}
	return int64(len(fd.Content))
}

func (o kvOps) Ls(ctx context.Context, p string) ([]FileInfo, error) {
	p, err := ValidatePath(p)
	if err != nil {
		return nil, err
	}
	t, err := o.table(ctx)
	if err != nil {
		return nil, err
	}
	if p != "/" {
		if _, ok, err := t.get(ctx, p); err != nil {
			return nil, err
		} else if ok {
			return nil, errNotDir(p)
		}
	}
	files, err := t.list(ctx, p)
	if err != nil {
		return nil, err
	}
	if len(files) == 0 && p != "/" {
		return nil, errNotFound(p)
	}
	prefix := dirPrefix(p)
	var out []FileInfo
	seenDir := map[string]bool{}
	for _, f := range files {
		rest := strings.TrimPrefix(f.Path, prefix)
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			d := prefix + rest[:i] + "/"
			if !seenDir[d] {
				seenDir[d] = true
				out = append(out, FileInfo{Path: d, IsDir: true})
			}
			continue
		}
		out = append(out, FileInfo{Path: f.Path, Size: fileSize(f.Data), ModifiedAt: f.Data.ModifiedAt})
	}
	slices.SortFunc(out, func(a, b FileInfo) int { return strings.Compare(a.Path, b.Path) })
	return out, nil
}

// lookup returns the file at p or the right error for a missing file.
func (o kvOps) lookup(ctx context.Context, t fileTable, p string) (FileData, error) {
	fd, ok, err := t.get(ctx, p)
	if err != nil {
		return FileData{}, err
	}
	if ok {
		return fd, nil
	}
	if p == "/" {
		return FileData{}, errIsDir(p)
	}
	if dir, err := t.hasChildren(ctx, p); err != nil {
		return FileData{}, err
	} else if dir {
		return FileData{}, errIsDir(p)
	}
	return FileData{}, errNotFound(p)
}

func (o kvOps) Read(ctx context.Context, p string, offset, limit int) (ReadResult, error) {
	p, err := ValidatePath(p)
	if err != nil {
		return ReadResult{}, err
	}
	t, err := o.table(ctx)
	if err != nil {
		return ReadResult{}, err
	}
	fd, err := o.lookup(ctx, t, p)
	if err != nil {
		return ReadResult{}, err
	}
	if fd.Encoding == "" {
		fd.Encoding = EncodingUTF8
	}
	if fd.Encoding == EncodingBase64 || IsBinaryPath(p) {
		return ReadResult{File: fd}, nil
	}
	return sliceRead(fd, offset, limit)
}

// checkWritable refuses to turn a directory into a file or to create a file
// below another file.
func (o kvOps) checkWritable(ctx context.Context, t fileTable, p string) error {
	if p == "/" {
		return errIsDir(p)
	}
	if dir, err := t.hasChildren(ctx, p); err != nil {
		return err
	} else if dir {
		return errIsDir(p)
	}
	for a := path.Dir(p); a != "/"; a = path.Dir(a) {
		if _, ok, err := t.get(ctx, a); err != nil {
			return err
		} else if ok {
			return errNotDir(a)
		}
	}
	return nil
}

func (o kvOps) store(ctx context.Context, t fileTable, p, content, encoding string) error {
	if err := o.checkWritable(ctx, t, p); err != nil {
		return err
	}
	stamp := now(ctx)
	fd := FileData{Content: content, Encoding: encoding, CreatedAt: stamp, ModifiedAt: stamp}
	if old, ok, err := t.get(ctx, p); err != nil {
		return err
	} else if ok && old.CreatedAt != "" {
		fd.CreatedAt = old.CreatedAt
	}
	return t.put(ctx, p, fd)
}

func (o kvOps) Write(ctx context.Context, p, content string) error {
	p, err := ValidatePath(p)
	if err != nil {
		return err
	}
	t, err := o.table(ctx)
	if err != nil {
		return err
	}
	return o.store(ctx, t, p, content, EncodingUTF8)
}

func (o kvOps) Edit(ctx context.Context, req EditRequest) (int, error) {
	p, err := ValidatePath(req.Path)
	if err != nil {
		return 0, err
	}
	t, err := o.table(ctx)
	if err != nil {
		return 0, err
	}
	fd, err := o.lookup(ctx, t, p)
	if err != nil {
		return 0, err
	}
	if fd.Encoding == EncodingBase64 {
		return 0, errf(InvalidArgument, p, "'%s' is a binary file and cannot be edited as text", p)
	}
	out, n, err := replaceString(fd.Content, req.Old, req.New, req.ReplaceAll)
	if err != nil {
		return 0, err
	}
	fd.Content = out
	fd.Encoding = EncodingUTF8
	fd.ModifiedAt = now(ctx)
	if fd.CreatedAt == "" {
		fd.CreatedAt = fd.ModifiedAt
	}
	return n, t.put(ctx, p, fd)
}

func (o kvOps) Delete(ctx context.Context, p string) error {
	p, err := ValidatePath(p)
	if err != nil {
		return err
	}
	if p == "/" {
		return errInvalid(p, "Refusing to delete the root directory '/'")
	}
	t, err := o.table(ctx)
	if err != nil {
		return err
	}
	var doomed []string
	if _, ok, err := t.get(ctx, p); err != nil {
		return err
	} else if ok {
		doomed = append(doomed, p)
	}
	below, err := t.list(ctx, p)
	if err != nil {
		return err
	}
	for _, f := range below {
		doomed = append(doomed, f.Path)
	}
	if len(doomed) == 0 {
		return errNotFound(p)
	}
	return t.remove(ctx, doomed)
}

// searchRoot validates a Glob or Grep root ("" means "/").
func searchRoot(p string) (string, error) {
	if p == "" {
		return "/", nil
	}
	return ValidatePath(p)
}

// compileSearchGlob compiles a file-tool glob, refusing ".." segments.
func compileSearchGlob(pattern string) (*Pattern, error) {
	if hasDotDot(pattern) {
		return nil, errInvalid(pattern, "Glob patterns must not contain '..': "+quotePath(pattern))
	}
	return CompilePattern(pattern, PatternOptions{})
}

func relTo(root, p string) string {
	if root == "/" {
		return strings.TrimPrefix(p, "/")
	}
	return strings.TrimPrefix(p, root+"/")
}

func (o kvOps) Glob(ctx context.Context, pattern, p string) (GlobResult, error) {
	root, err := searchRoot(p)
	if err != nil {
		return GlobResult{}, err
	}
	pat, err := compileSearchGlob(pattern)
	if err != nil {
		return GlobResult{}, err
	}
	t, err := o.table(ctx)
	if err != nil {
		return GlobResult{}, err
	}
	files, err := t.list(ctx, root)
	if err != nil {
		return GlobResult{}, err
	}
	var out []FileInfo
	for _, f := range files {
		if pat.Match(relTo(root, f.Path)) {
			out = append(out, FileInfo{Path: f.Path, Size: fileSize(f.Data), ModifiedAt: f.Data.ModifiedAt})
		}
	}
	sortByModified(out)
	return GlobResult{Matches: out}, nil
}

// sortByModified orders files most recently modified first, then by path,
// which is how the State and Store backends order glob results.
func sortByModified(fs []FileInfo) {
	slices.SortStableFunc(fs, func(a, b FileInfo) int {
		if c := strings.Compare(b.ModifiedAt, a.ModifiedAt); c != 0 {
			return c
		}
		return strings.Compare(a.Path, b.Path)
	})
}

func (o kvOps) Grep(ctx context.Context, req GrepRequest) (GrepResult, error) {
	root, err := searchRoot(req.Path)
	if err != nil {
		return GrepResult{}, err
	}
	var include *Pattern
	if req.Glob != "" {
		if include, err = compileSearchGlob(req.Glob); err != nil {
			return GrepResult{}, err
		}
	}
	t, err := o.table(ctx)
	if err != nil {
		return GrepResult{}, err
	}
	var files []kvFile
	if fd, ok, err := t.get(ctx, root); err != nil {
		return GrepResult{}, err
	} else if ok && root != "/" {
		files = []kvFile{{Path: root, Data: fd}}
	} else if files, err = t.list(ctx, root); err != nil {
		return GrepResult{}, err
	}
	return grepFiles(ctx, root, files2seq(files), req.Pattern, include, req.MaxCount)
}

func files2seq(files []kvFile) func(yield func(string, string) bool) {
	return func(yield func(string, string) bool) {
		for _, f := range files {
			if f.Data.Encoding == EncodingBase64 {
				continue
			}
			if !yield(f.Path, f.Data.Content) {
				return
			}
		}
	}
}

// grepFiles searches (path, content) pairs for a literal pattern: the
// in-memory grep shared by backends. include, when non-nil, filters on the
// path relative to root. maxCount > 0 stops at the first match beyond the
// cap and reports truncation.
func grepFiles(ctx context.Context, root string, files func(yield func(path, content string) bool), pattern string, include *Pattern, maxCount int) (GrepResult, error) {
	var res GrepResult
	if strings.Contains(pattern, "\n") {
		return res, nil // lines never contain a newline
	}
	for p, content := range files {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		if include != nil {
			rel := relTo(root, p)
			if p == root {
				rel = path.Base(p)
			}
			if !include.Match(rel) {
				continue
			}
		}
		if !strings.Contains(content, pattern) {
			continue
		}
		line := 0
		for rest := content; ; {
			line++
			i := strings.IndexByte(rest, '\n')
			text := rest
			if i >= 0 {
				text = rest[:i]
			}
			if strings.Contains(text, pattern) {
				if maxCount > 0 && len(res.Matches) >= maxCount {
					res.Truncated = true
					return res, nil
				}
				res.Matches = append(res.Matches, GrepMatch{Path: p, Line: line, Text: strings.TrimSuffix(text, "\r")})
			}
			if i < 0 {
				break
			}
			rest = rest[i+1:]
		}
	}
	return res, nil
}

func (o kvOps) Upload(ctx context.Context, files []UploadFile) []UploadResult {
	out := make([]UploadResult, len(files))
	t, terr := o.table(ctx)
	for i, f := range files {
		out[i].Path = f.Path
		if terr != nil {
			out[i].Err = terr
			continue
		}
		p, err := ValidatePath(f.Path)
		if err != nil {
			out[i].Err = err
			continue
		}
		content, enc := string(f.Content), EncodingUTF8
		if !utf8.Valid(f.Content) {
			content, enc = base64.StdEncoding.EncodeToString(f.Content), EncodingBase64
		}
		out[i].Err = o.store(ctx, t, p, content, enc)
	}
	return out
}

func (o kvOps) Download(ctx context.Context, paths []string) []DownloadResult {
	out := make([]DownloadResult, len(paths))
	t, terr := o.table(ctx)
	for i, raw := range paths {
		out[i].Path = raw
		if terr != nil {
			out[i].Err = terr
			continue
		}
		p, err := ValidatePath(raw)
		if err != nil {
			out[i].Err = err
			continue
		}
		fd, err := o.lookup(ctx, t, p)
		if err != nil {
			out[i].Err = err
			continue
		}
		out[i].Content, out[i].Err = fileBytes(fd)
	}
	return out
}

// fileBytes returns the raw bytes of a stored file, decoding base64.
func fileBytes(fd FileData) ([]byte, error) {
	if fd.Encoding == EncodingBase64 {
		b, err := base64.StdEncoding.DecodeString(fd.Content)
		if err != nil {
			return nil, errf(InvalidArgument, "", "stored file is marked base64 but does not decode: %v", err)
		}
		return b, nil
	}
	return []byte(fd.Content), nil
}

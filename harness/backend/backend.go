package backend

import (
	"context"
	"time"

	"github.com/dageval/dageval/harness/agent"
)

// Backend is where an agent's files live. Paths are slash-separated and
// absolute ("/notes/todo.md"); every backend normalises them with
// ValidatePath and refuses hostile ones with an InvalidPath error.
//
// Errors that callers branch on are *Error values carrying an ErrorCode;
// test them with errors.Is against the Err* sentinels or with CodeOf.
// Methods that return a listing may return a partial listing together with
// an error.
type Backend interface {
	// Ls lists the direct children of a directory: files, and
	// subdirectories with a trailing "/" and IsDir set, sorted by path.
	// A missing path is FileNotFound, a file is NotADirectory; "/" always
	// lists (possibly nothing).
	Ls(ctx context.Context, path string) ([]FileInfo, error)
	// Read returns a window of limit lines starting at the 0-based line
	// offset. A negative offset reads from the start; limit <= 0 reads
	// nothing and sets NoLinesRequested. Binary files come back whole,
	// base64-encoded, without a window.
	Read(ctx context.Context, path string, offset, limit int) (ReadResult, error)
	// Write creates the file or replaces its content, creating parent
	// directories as needed.
	Write(ctx context.Context, path, content string) error
	// Edit replaces exact occurrences of a string and reports how many it
	// replaced. Without ReplaceAll the string must occur exactly once.
	Edit(ctx context.Context, req EditRequest) (int, error)
	// Glob lists the regular files under path ("" or "/" for everything)
	// whose path matches pattern, with the semantics of CompilePattern.
	Glob(ctx context.Context, pattern, path string) (GlobResult, error)
	// Grep finds lines containing a literal string.
	Grep(ctx context.Context, req GrepRequest) (GrepResult, error)
	// Upload writes raw bytes, one result per file in input order; a failed
	// file does not stop the others.
	Upload(ctx context.Context, files []UploadFile) []UploadResult
	// Download reads raw bytes, one result per path in input order.
	Download(ctx context.Context, paths []string) []DownloadResult
}

// Deleter is implemented by backends that can delete. Delete removes a file,
// or a directory and everything under it. Deleting "/" is refused.
type Deleter interface {
	Backend
	Delete(ctx context.Context, path string) error
}

// Executor is implemented by backends that can run shell commands.
type Executor interface {
	Backend
	// ID names the execution environment, e.g. "local-1a2b3c4d".
	ID() string
	// Execute runs a command. A failing command is not an error: its exit
	// code and output are in the result. Errors mean the command could not
	// be run as asked (Unsupported, InvalidArgument).
	Execute(ctx context.Context, req ExecuteRequest) (ExecuteResult, error)
}

// CanDelete reports whether b supports Delete.
func CanDelete(b Backend) bool {
	_, ok := b.(Deleter)
	return ok
}

// CanExecute reports whether b can run commands. A backend that implements
// Executor but depends on something else to run commands (Composite)
// answers through a CanExecute method.
func CanExecute(b Backend) bool {
	if c, ok := b.(interface{ CanExecute() bool }); ok {
		return c.CanExecute()
	}
	_, ok := b.(Executor)
	return ok
}

// ArtifactsRoot is the directory under which middleware store artifacts
// (large tool results, offloaded conversation history): the Composite's
// configured root, "/" for every other backend.
func ArtifactsRoot(b Backend) string {
	if r, ok := b.(interface{ ArtifactsRoot() string }); ok {
		if root := r.ArtifactsRoot(); root != "" {
			return root
		}
	}
	return "/"
}

// FileData is a stored file: content (text, or base64 when Encoding is
// "base64") and ISO-8601 timestamps. It is the agent state's file type.
type FileData = agent.FileData

// Encodings of FileData.Content.
const (
	EncodingUTF8   = "utf-8"
	EncodingBase64 = "base64"
)

// FileInfo describes one entry of a listing. Directories have a trailing "/"
// in Path and IsDir set.
type FileInfo struct {
	Path       string `json:"path"`
	IsDir      bool   `json:"is_dir,omitempty"`
	Size       int64  `json:"size,omitempty"`
	ModifiedAt string `json:"modified_at,omitempty"`
}

// ReadResult is one window of a file.
type ReadResult struct {
	// File holds the window's text with LF line endings, or a binary file's
	// whole payload (Encoding "base64"), plus the file's timestamps.
	File FileData
	// StartLine and EndLine (1-based, inclusive) locate the window; both are
	// zero when there is no window (empty or binary file, no lines requested).
	StartLine, EndLine int
	// TotalLines counts the file's lines; zero when unknown.
	TotalLines int
	// NextOffset is the 0-based offset of the first unread line (equal to
	// EndLine), or zero when the window reached the end of the file.
	NextOffset int
	// NoLinesRequested is set when limit <= 0 asked for no lines; the file
	// was not inspected.
	NoLinesRequested bool
}

// EditRequest asks Edit to replace Old with New in the file at Path.
type EditRequest struct {
	Path       string
	Old        string
	New        string
	ReplaceAll bool
}

// GlobResult lists matching files. Truncated means the search stopped early
// (time budget) and Matches is incomplete.
type GlobResult struct {
	Matches   []FileInfo
	Truncated bool
}

// GrepRequest asks for the lines containing Pattern (a literal string, not
// a regular expression).
type GrepRequest struct {
	Pattern string
	// Path is a directory to search under, or a single file; "" means "/".
	Path string
	// Glob, when set, keeps only files whose search-root-relative path
	// matches it (CompilePattern semantics).
	Glob string
	// MaxCount caps the total number of matches; 0 means no cap. Returning
	// exactly MaxCount matches with none dropped is not truncation.
	MaxCount int
}

// GrepMatch is one matching line.
type GrepMatch struct {
	Path string `json:"path"`
	Line int    `json:"line"` // 1-based
	Text string `json:"text"`
}

// GrepResult lists matches in file order. Truncated means the search stopped
// early (match cap or time budget).
type GrepResult struct {
	Matches   []GrepMatch
	Truncated bool
}

// UploadFile is one file for Upload.
type UploadFile struct {
	Path    string
	Content []byte
}

// UploadResult reports one uploaded file; Err is nil on success.
type UploadResult struct {
	Path string
	Err  error
}

// DownloadResult is one downloaded file; Err is nil on success.
type DownloadResult struct {
	Path    string
	Content []byte
	Err     error
}

// NoTimeout asks Execute to run without a time limit on backends that allow
// it; others answer InvalidArgument.
const NoTimeout time.Duration = -1

// ExecuteRequest is one shell command.
type ExecuteRequest struct {
	Command string
	// Timeout bounds the run: 0 means the backend's default, NoTimeout asks
	// for none.
	Timeout time.Duration
}

// ExecuteResult is what a command produced.
type ExecuteResult struct {
	// Output is stdout followed by stderr (each stderr line prefixed
	// "[stderr] ").
	Output string
	// ExitCode is nil when the backend cannot tell.
	ExitCode *int
	// Truncated is set when Output was cut at the backend's size limit.
	Truncated bool
}

// ExitCode returns a pointer to code, for building ExecuteResults.
func ExitCode(code int) *int { return &code }

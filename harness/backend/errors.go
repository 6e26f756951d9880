package backend

import (
	"errors"
	"fmt"
)

// ErrorCode classifies a backend failure for callers that branch on it.
type ErrorCode string

// Error codes. The first four are the Deep Agents file-operation codes; the
// rest are Go-port additions so that every backend fails the same way.
const (
	FileNotFound     ErrorCode = "file_not_found"
	PermissionDenied ErrorCode = "permission_denied"
	IsDirectory      ErrorCode = "is_directory"
	InvalidPath      ErrorCode = "invalid_path"
	NotADirectory    ErrorCode = "not_a_directory"
	// Unsupported: the backend cannot do this (deleting through a route that
	// has no Delete, executing without a shell).
	Unsupported ErrorCode = "unsupported"
	// InvalidArgument: a parameter other than the path is unacceptable
	// (a timeout the backend refuses, a glob pattern it cannot compile).
	InvalidArgument ErrorCode = "invalid_argument"
	// Unavailable: the backend is not running — a sandbox before Start or
	// after Close.
	Unavailable ErrorCode = "unavailable"
)

// Error is a backend failure. Its message is written for the model: tools
// show it as "Error: <message>".
type Error struct {
	Code ErrorCode
	Path string
	Msg  string
	// Err is the underlying cause, if any.
	Err error
}

func (e *Error) Error() string { return e.Msg }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Is matches another *Error with the same non-empty code, so that
// errors.Is(err, ErrFileNotFound) works for every path.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code != "" && t.Code == e.Code && t.Path == "" && t.Msg == ""
}

// Sentinels for errors.Is.
var (
	ErrFileNotFound     = &Error{Code: FileNotFound}
	ErrPermissionDenied = &Error{Code: PermissionDenied}
	ErrIsDirectory      = &Error{Code: IsDirectory}
	ErrInvalidPath      = &Error{Code: InvalidPath}
	ErrNotADirectory    = &Error{Code: NotADirectory}
	ErrUnsupported      = &Error{Code: Unsupported}
	ErrInvalidArgument  = &Error{Code: InvalidArgument}
	ErrUnavailable      = &Error{Code: Unavailable}
)

// CodeOf returns the code of the first *Error in err's chain, or "".
func CodeOf(err error) ErrorCode {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

func errNotFound(path string) error {
	return &Error{Code: FileNotFound, Path: path, Msg: fmt.Sprintf("File '%s' not found", path)}
}

func errIsDir(path string) error {
	return &Error{Code: IsDirectory, Path: path, Msg: fmt.Sprintf("'%s' is a directory, not a file", path)}
}

func errNotDir(path string) error {
	return &Error{Code: NotADirectory, Path: path, Msg: fmt.Sprintf("'%s' is not a directory", path)}
}

func errInvalid(path, reason string) error {
	return &Error{Code: InvalidPath, Path: path, Msg: reason}
}

func errDenied(path, reason string) error {
	return &Error{Code: PermissionDenied, Path: path, Msg: reason}
}

func errf(code ErrorCode, path, format string, args ...any) error {
	return &Error{Code: code, Path: path, Msg: fmt.Sprintf(format, args...)}
}

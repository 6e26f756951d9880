package backend

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"sync"
	"unsafe"
	"weak"
)

// Appender is implemented by backends that can add to the end of a file
// without the caller reading the file and writing it back whole, which
// costs the whole file on every addition to a file that keeps growing.
type Appender interface {
	Backend
	// Append adds content to the end of the text file at path, creating it
	// (and its parent directories) when it is missing. The file is left as
	// Write of its old bytes followed by content would leave it.
	Append(ctx context.Context, path, content string) error
}

// AppendFile adds content to the end of the file at path: through b's
// Append when b is an Appender, and otherwise by downloading the file (a
// missing file is empty) and writing it back with content added.
func AppendFile(ctx context.Context, b Backend, path, content string) error {
	if a, ok := b.(Appender); ok {
		return a.Append(ctx, path, content)
	}
	return rewriteAppend(ctx, b, path, content)
}

// rewriteAppend is Append for a backend without one.
func rewriteAppend(ctx context.Context, b Backend, path, content string) error {
	var old []byte
	res := b.Download(ctx, []string{path})
	if len(res) != 1 {
		return fmt.Errorf("download of %s returned %d results", path, len(res))
	}
	switch err := res[0].Err; {
	case err == nil:
		old = res[0].Content
	case !errors.Is(err, ErrFileNotFound):
		return err
	}
	var s strings.Builder
	s.Grow(len(old) + len(content))
	s.Write(old)
	s.WriteString(content)
	return b.Write(ctx, path, s.String())
}

// Append implements Appender.
func (*State) Append(ctx context.Context, p, content string) error {
	return stateOps.Append(ctx, p, content)
}

// Append implements Appender.
func (s *Store) Append(ctx context.Context, p, content string) error {
	return s.ops.Append(ctx, p, content)
}

// Append implements Appender: through the routed backend's Append when it
// has one, and otherwise by rewriting the file there.
func (c *Composite) Append(ctx context.Context, p, content string) error {
	b, inner, err := c.Resolve(p)
	if err != nil {
		return err
	}
	return outerErr(AppendFile(ctx, b, inner, content), inner, path.Clean("/"+p))
}

// Append stores the old content followed by content, as Write would. The
// new content usually shares the old one's bytes (see appendBuffers), so
// that appending costs the added bytes, not the file.
func (o kvOps) Append(ctx context.Context, p, content string) error {
	p, err := ValidatePath(p)
	if err != nil {
		return err
	}
	t, err := o.table(ctx)
	if err != nil {
		return err
	}
	fd, err := o.lookup(ctx, t, p)
	switch {
	case err == nil:
	case errors.Is(err, ErrFileNotFound):
		return o.store(ctx, t, p, content, EncodingUTF8)
	default:
		return err
	}
	if fd.Encoding == EncodingBase64 {
		raw, err := fileBytes(fd)
		if err != nil {
			return err
		}
		return o.store(ctx, t, p, string(raw)+content, EncodingUTF8)
	}
	return o.store(ctx, t, p, appendBuffers.concat(fd.Content, content), EncodingUTF8)
}

// growBuffers makes appending to a string cost the appended bytes. A file's
// content is an immutable string, so old+new is normally a copy of the
// whole file. concat instead returns strings that are prefixes of a byte
// buffer with spare capacity, and appends by writing into that capacity:
// bytes past a string's end belong to no string handed out, so writing them
// changes no string. Each buffer remembers the longest prefix handed out;
// only a string of exactly that length (the latest content, not an older
// version or a slice of one) is extended in place, anything else is copied
// into a new buffer. The table holds buffers weakly, so it keeps no file
// alive that its holders dropped.
type growBuffers struct {
	mu      sync.Mutex
	bufs    map[uintptr]*growBuffer
	pruneAt int
}

type growBuffer struct {
	base weak.Pointer[byte]
	len  int
	cap  int
}

var appendBuffers growBuffers

// minGrowBuffer keeps buffers out of the tiny allocator, whose blocks pack
// several objects (a weak pointer to one would follow them all).
const minGrowBuffer = 256

func (g *growBuffers) concat(old, add string) string {
	if add == "" {
		return old
	}
	n := len(old) + len(add)
	g.mu.Lock()
	defer g.mu.Unlock()
	if old != "" {
		key := uintptr(unsafe.Pointer(unsafe.StringData(old)))
		if b := g.bufs[key]; b != nil && b.base.Value() == unsafe.StringData(old) && b.len == len(old) && n <= b.cap {
			buf := unsafe.Slice(unsafe.StringData(old), b.cap)
			copy(buf[len(old):], add)
			b.len = n
			return unsafe.String(&buf[0], n)
		}
	}
	buf := make([]byte, n, max(n+n/2, minGrowBuffer))
	copy(buf, old)
	copy(buf[len(old):], add)
	if g.bufs == nil {
		g.bufs = map[uintptr]*growBuffer{}
	}
	if len(g.bufs) >= max(g.pruneAt, 64) {
		g.prune()
	}
	g.bufs[uintptr(unsafe.Pointer(&buf[0]))] = &growBuffer{base: weak.Make(&buf[0]), len: n, cap: cap(buf)}
	return unsafe.String(&buf[0], n)
}

// prune drops the buffers no one holds any more. A freed buffer's address
// may be reused, which the weak pointer check in concat also catches.
func (g *growBuffers) prune() {
	for k, b := range g.bufs {
		if b.base.Value() == nil {
			delete(g.bufs, k)
		}
	}
	g.pruneAt = 2 * len(g.bufs)
}

package cassette

import (
	"bytes"
	"compress/gzip"
	"container/list"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"go.yaml.in/yaml/v4"
	vcr "gopkg.in/dnaeon/go-vcr.v4/pkg/cassette"

	"github.com/dageval/dageval/internal/fileutil"
	"github.com/dageval/dageval/internal/yamlx"
)

// Cassette is a go-vcr v4 cassette (format version 2) as dageval reads and
// writes it. The optional top-level "dageval" mapping says how the cassette
// is meant to be matched; go-vcr itself ignores it, so the files stay
// loadable by go-vcr's cassette.Load.
type Cassette struct {
	Version      int                `yaml:"version"`
	Meta         *Meta              `yaml:"dageval,omitempty"`
	Interactions []*vcr.Interaction `yaml:"interactions"`

	// Path is the file the cassette was read from, for messages.
	Path string `yaml:"-"`
	// Lines holds the line of each interaction in the file (0 when unknown).
	Lines []int `yaml:"-"`

	// keys remembers canonical request keys across replays of a parsed
	// file; copies of a cached Cassette share it.
	keys *keyCache
}

// keyCache maps an ignore-path signature and an interaction index to the
// interaction's canonical request key.
type keyCache struct {
	mu sync.Mutex
	m  map[keyRef]string
}

type keyRef struct {
	ignore string
	index  int
}

// RequestKey returns the canonical key (canon.Key) of interaction i's
// request body, computed once per parsed file and canon.
func (c *Cassette) RequestKey(i int, canon *Canon) string {
	if c.keys == nil {
		return canon.Key([]byte(c.Interactions[i].Request.Body))
	}
	ref := keyRef{canon.sig, i}
	c.keys.mu.Lock()
	k, ok := c.keys.m[ref]
	c.keys.mu.Unlock()
	if ok {
		return k
	}
	k = canon.Key([]byte(c.Interactions[i].Request.Body))
	c.keys.mu.Lock()
	c.keys.m[ref] = k
	c.keys.mu.Unlock()
	return k
}

// Meta is dageval's note in a cassette file.
type Meta struct {
	// Match is how requests find their interactions: "body" (the default)
	// or "order" for recordings whose request bodies came from another client.
	Match Match `yaml:"match,omitempty"`
	// Source says where an imported cassette came from.
	Source string `yaml:"source,omitempty"`
	// JSONBodies is JSONIndented when the file stores JSON bodies indented
	// (every cassette Marshal writes); reading compacts them again.
	JSONBodies string `yaml:"json_bodies,omitempty"`
}

// Match says which requests an interaction answers.
type Match string

// Match modes.
const (
	// MatchBody matches method, path, query and the canonical JSON body
	// (sorted keys, ignored fields removed). Equal requests in a lane are
	// answered in recorded order.
	MatchBody Match = "body"
	// MatchOrder matches method and path only, in recorded order per lane:
	// for recordings whose request bodies came from another client.
	MatchOrder Match = "order"
)

// ParseMatch parses a match mode name.
func ParseMatch(s string) (Match, error) {
	switch m := Match(s); m {
	case MatchBody, MatchOrder:
		return m, nil
	}
	return "", fmt.Errorf("unknown match mode %q: want body or order", s)
}

// LaneHeader is the request header under which a cassette stores the lane an
// interaction was recorded in. The recorder adds it to what it saves and never
// sends it to the server.
const LaneHeader = "X-Dageval-Lane"

// MatchMode is the cassette's declared match mode, "body" when unset.
func (c *Cassette) MatchMode() Match {
	if c.Meta != nil && c.Meta.Match != "" {
		return c.Meta.Match
	}
	return MatchBody
}

// Lane returns the lane interaction i was recorded in ("" for none).
func (c *Cassette) Lane(i int) string { return c.Interactions[i].Request.Headers.Get(LaneHeader) }

// line returns the line of interaction i, 0 when unknown.
func (c *Cassette) line(i int) int {
	if i < len(c.Lines) {
		return c.Lines[i]
	}
	return 0
}

// ParseError is a cassette that cannot be read, with the line at fault.
type ParseError struct {
	File   string
	Line   int // 0 when unknown
	Column int // 0 when unknown
	Msg    string
}

func (e *ParseError) Error() string {
	if e.Line > 0 && e.Column > 0 {
		return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Column, e.Msg)
	}
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Msg)
}

func parseErrorf(file string, line int, format string, args ...any) *ParseError {
	return &ParseError{File: file, Line: line, Msg: fmt.Sprintf(format, args...)}
}

var yamlLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`line (\d+)`) })

// asParseError turns any error from reading a cassette into a ParseError.
func asParseError(file string, err error) *ParseError {
	var pe *ParseError
	if errors.As(err, &pe) {
		return pe
	}
	var ye *yamlx.Error
	if errors.As(err, &ye) {
		return &ParseError{File: file, Line: ye.Line, Column: ye.Column, Msg: ye.Msg}
	}
	msg := strings.TrimPrefix(err.Error(), file+": ")
	line := 0
	if m := yamlLine().FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
	}
	return &ParseError{File: file, Line: line, Msg: msg}
}

// loadNode parses a cassette's YAML into its node tree within the cassette
// limits (yamlx.CassetteLimits: size, depth, aliases), so that a small
// hostile file is refused before it is expanded.
func loadNode(name string, data []byte) (*yaml.Node, error) {
	lim, err := yamlx.CassetteLimits()
	if err != nil {
		return nil, &ParseError{File: name, Msg: err.Error()}
	}
	doc, err := yamlx.LoadNode(name, data, lim, yamlx.EnvCassetteMaxBytes)
	if err != nil {
		return nil, asParseError(name, err)
	}
	return doc, nil
}

// Read reads a go-vcr cassette file (plain or gzip-compressed).
func Read(path string) (*Cassette, error) {
	data, err := readMaybeGzip(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// Parse parses go-vcr cassette YAML; name labels errors.
func Parse(name string, data []byte) (*Cassette, error) {
	root, err := loadNode(name, data)
	if err != nil {
		return nil, err
	}
	if root.Kind == yaml.DocumentNode && len(root.Content) > 0 {
		root = root.Content[0]
	}
	if root.Kind != yaml.MappingNode {
		return nil, parseErrorf(name, root.Line, "a cassette is a mapping with version and interactions")
	}
	switch v := mappingValue(root, "version"); {
	case v == nil:
		return nil, parseErrorf(name, root.Line, "version is missing (want %d, the go-vcr v4 format)", vcr.CassetteFormatVersion)
	case v.Value == "1":
		return nil, parseErrorf(name, v.Line, "version 1 is a vcrpy cassette; import it with `dageval cassette import --from vcrpy`")
	case v.Value != strconv.Itoa(vcr.CassetteFormatVersion):
		return nil, parseErrorf(name, v.Line, "version: got %q, want %d (go-vcr v4 format)", v.Value, vcr.CassetteFormatVersion)
	}
	c := &Cassette{Path: name, keys: &keyCache{m: map[keyRef]string{}}}
	if err := root.Load(c, yaml.WithKnownFields()); err != nil {
		return nil, asParseError(name, fmt.Errorf("%s: %w", name, err))
	}
	if c.Meta != nil && c.Meta.Match != "" {
		if _, err := ParseMatch(string(c.Meta.Match)); err != nil {
			return nil, parseErrorf(name, keyLine(mappingValue(root, "dageval"), "match"), "dageval.match: %v", err)
		}
	}
	if c.Meta != nil {
		switch c.Meta.JSONBodies {
		case "":
		case JSONIndented:
			compactBodies(c.Interactions)
		default:
			return nil, parseErrorf(name, keyLine(mappingValue(root, "dageval"), "json_bodies"), "dageval.json_bodies: got %q, want %s (or nothing)", c.Meta.JSONBodies, JSONIndented)
		}
	}
	if seq := mappingValue(root, "interactions"); seq != nil && seq.Kind == yaml.SequenceNode {
		for _, it := range seq.Content {
			c.Lines = append(c.Lines, it.Line)
		}
	}
	for i, it := range c.Interactions {
		if it == nil {
			return nil, parseErrorf(name, c.line(i), "interaction %d: empty entry", i)
		}
		if it.Request.Method == "" {
			return nil, parseErrorf(name, c.line(i), "interaction %d: request.method is missing", i)
		}
		if it.Request.URL == "" {
			return nil, parseErrorf(name, c.line(i), "interaction %d: request.url is missing", i)
		}
		if it.Response.Code < 100 || it.Response.Code > 599 {
			return nil, parseErrorf(name, c.line(i), "interaction %d: response.code %d is not an HTTP status", i, it.Response.Code)
		}
	}
	return c, nil
}

func mappingValue(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

func keyLine(m *yaml.Node, key string) int {
	if m == nil {
		return 0
	}
	if m.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(m.Content); i += 2 {
			if m.Content[i].Value == key {
				return m.Content[i].Line
			}
		}
	}
	return m.Line
}

func readMaybeGzip(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(data) >= 2 && data[0] == 0x1f && data[1] == 0x8b {
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		out, err := io.ReadAll(zr)
		if err != nil {
			return nil, fmt.Errorf("%s: gzip: %w", path, err)
		}
		return out, nil
	}
	return data, nil
}

// Marshal renders the cassette as go-vcr YAML. Interactions are grouped by
// lane (the default lane first, then lanes by name, each in recorded order)
// and renumbered, so concurrent recordings of the same conversation produce
// the same bytes. JSON bodies are written indented (see JSONIndented), a
// field a line, as YAML block scalars; event streams are block scalars of
// their exact bytes. go-vcr reads the result too (it sees the bodies
// indented).
func (c *Cassette) Marshal() ([]byte, error) {
	meta := Meta{JSONBodies: JSONIndented}
	if c.Meta != nil {
		meta.Match, meta.Source = c.Meta.Match, c.Meta.Source
	}
	out := Cassette{Version: vcr.CassetteFormatVersion, Meta: &meta, Interactions: indentBodies(c.Interactions)}
	slices.SortStableFunc(out.Interactions, func(a, b *vcr.Interaction) int {
		return strings.Compare(a.Request.Headers.Get(LaneHeader), b.Request.Headers.Get(LaneHeader))
	})
	binary := false
	for i, it := range out.Interactions {
		it.ID = i
		binary = binary || isBinaryBody(it.Request.Body, it.Request.Headers.Get("Content-Type")) ||
			isBinaryBody(it.Response.Body, it.Response.Headers.Get("Content-Type"))
	}
	var v any = &out
	if binary {
		doc, err := binaryBodies(&out)
		if err != nil {
			return nil, err
		}
		v = doc
	}
	var buf bytes.Buffer
	buf.WriteString("---\n")
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// isBinaryBody reports whether a body is kept base64-encoded: an AWS event
// stream, or any body YAML text could not hold byte for byte (invalid
// UTF-8, control characters).
func isBinaryBody(body, contentType string) bool {
	if body == "" {
		return false
	}
	if IsEventStreamType(contentType) || !utf8.ValidString(body) {
		return true
	}
	for i := 0; i < len(body); i++ {
		if c := body[i]; c < 0x20 && c != '\t' && c != '\n' && c != '\r' || c == 0x7f {
			return true
		}
	}
	return false
}

// binaryBodies is the cassette as a YAML node whose binary bodies are
// !!binary scalars: base64 in lines of 76 characters. The tag is the
// encoding marker; YAML decoders, go-vcr's included, turn such a scalar
// back into the exact bytes, so the files stay loadable everywhere and
// cassettes without binary bodies are written as before.
func binaryBodies(c *Cassette) (*yaml.Node, error) {
	var doc yaml.Node
	if err := doc.Encode(c); err != nil {
		return nil, err
	}
	seq := mappingValue(&doc, "interactions")
	if seq == nil || seq.Kind != yaml.SequenceNode || len(seq.Content) != len(c.Interactions) {
		return nil, errors.New("cassette: interactions did not encode as a sequence")
	}
	for i, item := range seq.Content {
		it := c.Interactions[i]
		for _, side := range []struct {
			key, body, contentType string
		}{
			{"request", it.Request.Body, it.Request.Headers.Get("Content-Type")},
			{"response", it.Response.Body, it.Response.Headers.Get("Content-Type")},
		} {
			if !isBinaryBody(side.body, side.contentType) {
				continue
			}
			n := mappingValue(mappingValue(item, side.key), "body")
			if n == nil || n.Kind != yaml.ScalarNode {
				return nil, fmt.Errorf("cassette: interaction %d: %s body did not encode as a scalar", i, side.key)
			}
			n.Tag, n.Style, n.Value = "!!binary", yaml.LiteralStyle, wrapBase64(side.body)
		}
	}
	return &doc, nil
}

func wrapBase64(s string) string {
	enc := base64.StdEncoding.EncodeToString([]byte(s))
	var b strings.Builder
	for len(enc) > 76 {
		b.WriteString(enc[:76])
		b.WriteByte('\n')
		enc = enc[76:]
	}
	b.WriteString(enc)
	return b.String()
}

// statusText is the status line go-vcr would have recorded.
func statusText(code int) string {
	if t := http.StatusText(code); t != "" {
		return fmt.Sprintf("%d %s", code, t)
	}
	return fmt.Sprintf("%d", code)
}

// Response builds a fresh response to req from a recorded interaction;
// nothing the client does to it reaches the cassette.
func Response(req *http.Request, it *vcr.Interaction) *http.Response {
	h := it.Response.Headers.Clone()
	if h == nil {
		h = http.Header{}
	}
	status := it.Response.Status
	if status == "" {
		status = statusText(it.Response.Code)
	}
	return &http.Response{
		Status:        status,
		StatusCode:    it.Response.Code,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        h,
		Body:          io.NopCloser(strings.NewReader(it.Response.Body)),
		ContentLength: int64(len(it.Response.Body)),
		Request:       req,
	}
}

// parsed keeps recently parsed cassettes keyed by their exact bytes, so that
// replaying the same file again (go test -count=N, repeated runs of one
// case, benchmarks) skips the YAML parse, which dominates replay time.
// Entries are never modified after parsing; the least recently used are
// dropped beyond parsedMaxEntries files or parsedMaxBytes of file content.
//
// byPath lets a file whose size and modification time are unchanged skip
// even the read, which was the largest allocation of a replayed run. It is
// trusted only for files last modified at least stableAge before they were
// read, so a rewrite within one timestamp tick cannot go unnoticed.
var parsed = struct {
	sync.Mutex
	entries map[string]*list.Element
	order   *list.List // front = most recently used
	size    int
	byPath  map[string]pathStamp
}{entries: map[string]*list.Element{}, order: list.New(), byPath: map[string]pathStamp{}}

const (
	parsedMaxEntries = 64
	parsedMaxBytes   = 32 << 20
	stableAge        = 2 * time.Second
)

type parsedEntry struct {
	data  string
	c     *Cassette
	paths []string // byPath entries that point here
}

// pathStamp is what a file looked like when its bytes were cached.
type pathStamp struct {
	size    int64
	modTime time.Time
	el      *list.Element
}

// ReadShared is Read for replay: a file read before, with the same bytes or
// an unchanged stamp, comes from a cache. The result is shared: callers must
// not modify it or its interactions.
func ReadShared(path string) (*Cassette, error) {
	fi, statErr := os.Stat(path)
	stable := statErr == nil && fi.Mode().IsRegular() && time.Since(fi.ModTime()) >= stableAge
	if stable {
		parsed.Lock()
		if ps, ok := parsed.byPath[path]; ok && ps.size == fi.Size() && ps.modTime.Equal(fi.ModTime()) {
			parsed.order.MoveToFront(ps.el)
			c := *ps.el.Value.(*parsedEntry).c
			parsed.Unlock()
			c.Path = path
			return &c, nil
		}
		parsed.Unlock()
	}
	data, err := readMaybeGzip(path)
	if err != nil {
		return nil, err
	}
	remember := func(el *list.Element) {
		if !stable {
			return
		}
		e := el.Value.(*parsedEntry)
		if !slices.Contains(e.paths, path) {
			e.paths = append(e.paths, path)
		}
		parsed.byPath[path] = pathStamp{size: fi.Size(), modTime: fi.ModTime(), el: el}
	}
	parsed.Lock()
	if el, ok := parsed.entries[string(data)]; ok { // no copy: the compiler looks up []byte keys in place
		parsed.order.MoveToFront(el)
		remember(el)
		c := *el.Value.(*parsedEntry).c
		parsed.Unlock()
		c.Path = path
		return &c, nil
	}
	parsed.Unlock()
	c, err := Parse(path, data)
	if err != nil {
		return nil, err
	}
	if key := string(data); len(key) <= parsedMaxBytes/4 {
		parsed.Lock()
		el, ok := parsed.entries[key]
		if !ok {
			el = parsed.order.PushFront(&parsedEntry{data: key, c: c})
			parsed.entries[key] = el
			parsed.size += len(key)
			for parsed.order.Len() > parsedMaxEntries || parsed.size > parsedMaxBytes {
				old := parsed.order.Remove(parsed.order.Back()).(*parsedEntry)
				delete(parsed.entries, old.data)
				for _, p := range old.paths {
					if ps, ok := parsed.byPath[p]; ok && ps.el.Value == old {
						delete(parsed.byPath, p)
					}
				}
				parsed.size -= len(old.data)
			}
		}
		if _, live := parsed.entries[key]; live {
			remember(el)
		}
		parsed.Unlock()
	}
	cp := *c
	return &cp, nil
}

// SecretError reports why a cassette was not written. It names where each
// finding is, never the secret.
type SecretError struct {
	Path     string
	Findings []string
}

func (e *SecretError) Error() string {
	return fmt.Sprintf("fakes: refusing to write %s: it would contain secrets:\n  %s", e.Path, strings.Join(e.Findings, "\n  "))
}

// Write saves c (as Marshal renders it) to path atomically, creating
// directories as needed, unless the file would hold a secret: one of the
// values in secrets (see EnvSecrets), a sensitive header or query parameter
// that is not redacted, or a key-shaped string. Then it returns a
// *SecretError and leaves the file as it was.
func Write(path string, c *Cassette, secrets []string) error {
	scan := newSecretScanner(secrets)
	var findings []string
	for i, it := range c.Interactions {
		for _, f := range scan.interaction(it) {
			findings = append(findings, fmt.Sprintf("interaction %d (%s %s): %s", i, it.Request.Method, urlPath(it.Request.URL), f))
		}
	}
	data, err := c.Marshal()
	if err != nil {
		return fmt.Errorf("encoding %s: %w", path, err)
	}
	if len(findings) == 0 {
		// The file as a whole, in case encoding put a value somewhere unexpected.
		for _, f := range scan.text("cassette file", string(data)) {
			findings = append(findings, f.String())
		}
	}
	if len(findings) > 0 {
		return &SecretError{Path: path, Findings: findings}
	}
	return fileutil.WriteFileAtomic(path, data)
}

// urlPath is the path of a URL, which is safe to print where the query may
// hold a secret.
func urlPath(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return u.Path
	}
	return "(unparseable URL)"
}

package recorded

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/goccy/go-yaml"

	"github.com/dageval/dageval/harness/provider"
	"github.com/dageval/dageval/internal/yamlx"
)

// Files lists the recordings, e.g. "test_anthropic/test_anthropic_tool_output.yaml", sorted.
func Files() []string {
	dir, err := Dir()
	if err != nil {
		return nil
	}
	var out []string
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".yaml") {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	slices.Sort(out)
	return out
}

// Projects keep their recordings, converted to go-vcr cassettes by
// `dageval cassette import`, in cassettes/thirdparty/<project>/imported;
// each project's licence is in the directory above. Load and Dir read
// pydantic-ai's (MIT), the first imported.
const (
	thirdPartyDir = "cassettes/thirdparty"
	pydanticAI    = "pydantic-ai"
)

// Dir returns the directory of pydantic-ai's recordings (see ProjectDir).
func Dir() (string, error) { return ProjectDir(pydanticAI) }

// ProjectDir returns the directory of one project's imported recordings,
// e.g. "llm-gemini". It is found from the working directory, which go test
// sets to the package under test, by walking up to the module root.
func ProjectDir(project string) (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, filepath.FromSlash(thirdPartyDir), project, "imported"), nil
		}
		if filepath.Dir(dir) == dir {
			return "", fmt.Errorf("recorded: no go.mod above %s", wd)
		}
	}
}

// Interaction is one recorded request and its answer.
type Interaction struct {
	Method string
	URL    *url.URL
	// RequestBody is the JSON the original client sent.
	RequestBody []byte
	Status      int
	Header      http.Header
	// Body is the response body as the server sent it (JSON or SSE text).
	Body []byte
}

// Streamed reports whether the answer is a server-sent event stream.
func (i Interaction) Streamed() bool { return i.Answer().Streamed() }

// Answer is the recorded response as adapters decode it.
func (i Interaction) Answer() provider.RecordedAnswer {
	return provider.RecordedAnswer{StatusCode: i.Status, Header: i.Header, Body: i.Body}
}

// Cassette is one recording.
type Cassette struct {
	Name         string
	Interactions []Interaction
}

// goVCRFile is the part of a go-vcr v4 cassette the tests need.
type goVCRFile struct {
	Version      int `yaml:"version"`
	Interactions []struct {
		Request struct {
			Method string `yaml:"method"`
			URL    string `yaml:"url"`
			Body   string `yaml:"body"`
		} `yaml:"request"`
		Response struct {
			Code    int                 `yaml:"code"`
			Headers map[string][]string `yaml:"headers"`
			Body    string              `yaml:"body"`
		} `yaml:"response"`
	} `yaml:"interactions"`
}

// Load reads one of pydantic-ai's recordings by its name under Dir.
func Load(name string) (*Cassette, error) { return LoadProject(pydanticAI, name) }

// LoadProject reads one recording of a project by its name under
// ProjectDir(project).
func LoadProject(project, name string) (*Cassette, error) {
	dir, err := ProjectDir(project)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
	if err != nil {
		return nil, err
	}
	// The recordings come from other projects: read them within the
	// cassette limits (size, nesting depth, alias expansion) like any
	// cassette.
	lim, err := yamlx.CassetteLimits()
	if err != nil {
		return nil, err
	}
	af, err := yamlx.ParseFileWith(name, data, lim)
	if err != nil {
		return nil, err
	}
	var f goVCRFile
	if len(af.Docs) > 0 && af.Docs[0].Body != nil {
		if err := yaml.NodeToValue(af.Docs[0].Body, &f); err != nil {
			return nil, fmt.Errorf("%s: %s", name, yaml.FormatError(err, false, false))
		}
	}
	if f.Version != 2 {
		return nil, fmt.Errorf("%s: version %d, want 2 (a go-vcr cassette)", name, f.Version)
	}
	c := &Cassette{Name: name}
	for n, raw := range f.Interactions {
		u, err := url.Parse(raw.Request.URL)
		if err != nil {
			return nil, fmt.Errorf("%s: interaction %d: %w", name, n, err)
		}
		in := Interaction{Method: raw.Request.Method, URL: u, Status: raw.Response.Code, Header: http.Header{},
			RequestBody: []byte(raw.Request.Body), Body: []byte(raw.Response.Body)}
		for k, vs := range raw.Response.Headers {
			for _, v := range vs {
				in.Header.Add(k, v)
			}
		}
		c.Interactions = append(c.Interactions, in)
	}
	return c, nil
}

// MustLoad is Load for tests.
func MustLoad(t testing.TB, name string) *Cassette { return MustLoadProject(t, pydanticAI, name) }

// MustLoadProject is LoadProject for tests.
func MustLoadProject(t testing.TB, project, name string) *Cassette {
	t.Helper()
	c, err := LoadProject(project, name)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// BaseURL is the API root of the recording's first request with the
// endpoint removed: "" for .../v1/messages, "/v1" for .../v1/chat/completions,
// "" for Gemini's /v1beta/models/{model}:generateContent.
func (c *Cassette) BaseURL() string {
	if len(c.Interactions) == 0 {
		return ""
	}
	p := c.Interactions[0].URL.Path
	for _, suffix := range []string{"/v1/messages", "/chat/completions", "/responses"} {
		if strings.HasSuffix(p, suffix) {
			return strings.TrimSuffix(p, suffix)
		}
	}
	if i := strings.Index(p, "/v1beta/models/"); i >= 0 {
		return p[:i]
	}
	return p
}

// route is the path a request is served on. The server answers in
// recorded order, and Gemini's whole and streamed forms of one call share
// a route, as in a replay in order (fakes/cassette.RoutePath): the adapter
// reads either shape whichever way it calls.
func route(path string) string {
	if rest, ok := strings.CutSuffix(path, ":streamGenerateContent"); ok {
		return rest + ":generateContent"
	}
	return path
}

// Request is a request the test server received.
type Request struct {
	Method string
	Path   string
	Query  string
	Header http.Header
	Body   []byte
}

// JSON decodes the request body.
func (r Request) JSON(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("request body is not JSON: %v\n%s", err, r.Body)
	}
	return m
}

// Server answers requests with a cassette's interactions in recorded order,
// checking method and path. It is a loopback httptest server.
type Server struct {
	*httptest.Server
	t        testing.TB
	cassette *Cassette
	mu       sync.Mutex
	next     int
	received []Request
}

// Serve starts a server for c that is closed when the test ends.
func Serve(t testing.TB, c *Cassette) *Server {
	t.Helper()
	s := &Server{t: t, cassette: c}
	s.Server = httptest.NewServer(http.HandlerFunc(s.handle))
	t.Cleanup(s.Close)
	return s
}

// BaseURL is the server's URL plus the recording's API root.
func (s *Server) BaseURL() string { return s.URL + s.cassette.BaseURL() }

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	idx := s.next
	s.next++
	s.received = append(s.received, Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header.Clone(), Body: body})
	s.mu.Unlock()
	if idx >= len(s.cassette.Interactions) {
		s.t.Errorf("%s: unexpected request %d (%s %s): the recording has only %d", s.cassette.Name, idx, r.Method, r.URL.Path, len(s.cassette.Interactions))
		http.Error(w, "no more recorded interactions", http.StatusTeapot)
		return
	}
	in := s.cassette.Interactions[idx]
	if r.Method != in.Method || route(r.URL.Path) != route(in.URL.Path) {
		s.t.Errorf("%s: request %d is %s %s, recorded %s %s", s.cassette.Name, idx, r.Method, r.URL.Path, in.Method, in.URL.Path)
		http.Error(w, "request does not match the recording", http.StatusTeapot)
		return
	}
	for k, vs := range in.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	if w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", "application/json")
	}
	w.WriteHeader(in.Status)
	_, _ = io.Copy(w, bytes.NewReader(in.Body))
}

// Requests returns the requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.received)
}

// Served is the number of requests answered so far.
func (s *Server) Served() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.next
}

package recorder

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	vcr "gopkg.in/dnaeon/go-vcr.v4/pkg/cassette"
	vcrrecorder "gopkg.in/dnaeon/go-vcr.v4/pkg/recorder"

	"github.com/dageval/dageval/fakes/cassette"
	"github.com/dageval/dageval/harness/provider"
	"github.com/dageval/dageval/internal/scrub"
)

// Mode says where a Recorder's responses come from.
type Mode string

// Recorder modes.
const (
	// ModeReplay answers from the cassette only. A missing cassette or a
	// request with no recorded interaction is an error; nothing reaches the
	// network. It is the default, and CI=true forces it over the recording
	// modes.
	ModeReplay Mode = "replay"
	// ModeRecord sends every request to the server and rewrites the cassette
	// with what it saw when the recorder stops.
	ModeRecord Mode = "record"
	// ModeRecordMissing replays what the cassette has and records the rest.
	ModeRecordMissing Mode = "record-missing"
	// ModeLive sends every request to the server and keeps nothing. Only an
	// explicit request selects it, in CI too.
	ModeLive Mode = "live"
)

// ParseMode parses a mode name.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case ModeReplay, ModeRecord, ModeRecordMissing, ModeLive:
		return m, nil
	}
	return "", fmt.Errorf("unknown mode %q: want replay, record, record-missing or live", s)
}

// ErrCassetteNotFound and ErrInteractionNotFound are go-vcr's sentinels; a
// replay that cannot be served wraps one of them.
var (
	ErrCassetteNotFound    = vcr.ErrCassetteNotFound
	ErrInteractionNotFound = vcr.ErrInteractionNotFound
)

// ErrStopped is returned for requests made after Stop.
var ErrStopped = errors.New("fakes: recorder is stopped")

// Option configures a Recorder.
type Option func(*config)

type config struct {
	mode          Mode
	match         cassette.Match
	ignore        []string
	redactHeaders []string
	secrets       []string
	secretEnv     []string
	transport     http.RoundTripper
	getenv        func(string) string
	recordedHost  string
	noLatency     bool
}

// WithMode asks for a mode. With CI=true, record and record-missing become
// replay (see ResolveMode).
func WithMode(m Mode) Option { return func(c *config) { c.mode = m } }

// WithMatch overrides the cassette's declared match mode.
func WithMatch(m cassette.Match) Option { return func(c *config) { c.match = m } }

// WithIgnoreFields ignores more request-body fields when matching, in
// addition to cassette.DefaultIgnoredFields (see cassette.NewCanon for the
// path syntax).
func WithIgnoreFields(paths ...string) Option {
	return func(c *config) { c.ignore = append(c.ignore, paths...) }
}

// WithRedactHeaders redacts more headers, in addition to cassette.SensitiveHeaders.
func WithRedactHeaders(names ...string) Option {
	return func(c *config) { c.redactHeaders = append(c.redactHeaders, names...) }
}

// WithSecrets names values that must appear nowhere in a saved cassette.
func WithSecrets(values ...string) Option {
	return func(c *config) { c.secrets = append(c.secrets, values...) }
}

// WithSecretEnv names more environment variables (beside cassette.DefaultSecretEnv)
// whose values must appear nowhere in a saved cassette.
func WithSecretEnv(names ...string) Option {
	return func(c *config) { c.secretEnv = append(c.secretEnv, names...) }
}

// WithRealTransport sets the transport used when recording or live
// (http.DefaultTransport at the time of the call by default).
func WithRealTransport(rt http.RoundTripper) Option { return func(c *config) { c.transport = rt } }

// WithGetenv replaces os.Getenv for CI, DAGEVAL_RECORD and the secret variables.
func WithGetenv(fn func(string) string) Option { return func(c *config) { c.getenv = fn } }

// WithRecordedHost saves recorded requests under this host (e.g.
// "api.anthropic.com") instead of the one contacted. Recording against a
// local server on a random port then writes the same file every time;
// matching ignores the host, so replay is unaffected.
func WithRecordedHost(host string) Option { return func(c *config) { c.recordedHost = host } }

// WithoutLatency keeps no timings in recorded interactions (duration 0s,
// which replay reports as unknown latency). Recordings made against a local
// scripted server use it: their timings say nothing about a model, and
// leaving them out keeps every recording of the same run byte-identical.
func WithoutLatency() Option { return func(c *config) { c.noLatency = true } }

// ResolveMode applies the environment to a requested mode ("" for none).
// With CI=true, everything but an explicit live request replays: CI never
// records, and a missing cassette or interaction fails instead of reaching
// the network. Live is kept because it was asked for by name, never writes a
// cassette, and is how a CI job runs against a local server or a nightly job
// against a real provider. Outside CI a requested mode wins; otherwise
// DAGEVAL_RECORD=1 (or "record") records and DAGEVAL_RECORD=missing records
// what is missing; otherwise replay. The reason says which rule decided.
func ResolveMode(requested Mode, getenv func(string) string) (mode Mode, reason string, err error) {
	return ResolveModeOver(requested, "", getenv)
}

// ResolveModeOver is ResolveMode for a caller with a default mode of its
// own, such as a suite file's mode: the precedence is requested (a --mode
// flag, an option), then DAGEVAL_RECORD, then fallback, then replay. CI=true
// treats a fallback as it treats a request: live stays live, the recording
// modes replay. The reason for a fallback is "default".
func ResolveModeOver(requested, fallback Mode, getenv func(string) string) (mode Mode, reason string, err error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	for _, m := range []Mode{requested, fallback} {
		if m != "" {
			if _, err := ParseMode(string(m)); err != nil {
				return "", "", err
			}
		}
	}
	ci, _ := strconv.ParseBool(getenv("CI"))
	chosen, why := requested, "requested"
	if chosen == "" && !ci {
		switch v := getenv("DAGEVAL_RECORD"); strings.ToLower(v) {
		case "", "0", "false", "no":
		case "1", "true", "yes", "record":
			return ModeRecord, "DAGEVAL_RECORD=" + v, nil
		case "missing", "record-missing":
			return ModeRecordMissing, "DAGEVAL_RECORD=" + v, nil
		default:
			return "", "", fmt.Errorf("DAGEVAL_RECORD=%q: want 1 (record everything) or missing (record what the cassette lacks)", v)
		}
	}
	if chosen == "" {
		chosen, why = fallback, "default"
	}
	if ci && chosen != ModeLive {
		if chosen != "" && chosen != ModeReplay {
			if why == "default" {
				return ModeReplay, fmt.Sprintf("CI=true forces replay (the default was %s)", chosen), nil
			}
			return ModeReplay, fmt.Sprintf("CI=true forces replay (%s was requested)", chosen), nil
		}
		return ModeReplay, "CI=true forces replay", nil
	}
	if chosen == "" {
		return ModeReplay, "default", nil
	}
	return chosen, why, nil
}

// Recorder records and replays HTTP exchanges with model providers. Put its
// Client (or the Recorder itself, an http.RoundTripper) under a provider SDK.
//
// Each recorded interaction keeps how long the exchange took, from sending
// the request to the last byte of the answer, in go-vcr's duration field
// (go-vcr itself stops its clock at the response headers, which for a
// stream is before the answer), and for an event stream the time to its
// first byte in the response header provider.FirstEventHeader, since
// go-vcr's format has no other place for per-interaction data. Every answer
// the recorder serves carries the recorded duration in
// provider.DurationHeader, so the adapters report the recorded latency, not
// the replay's. Recorded latency is never slept out.
//
// Requests are matched per lane (see WithLane and LaneOf): an interaction
// recorded in a lane answers only requests from that lane, while
// interactions recorded without a lane answer any lane. Within a lane,
// matching interactions are handed out in recorded order and each once.
//
// The match mode is the one the cassette declares (dageval.match, body by
// default) unless WithMatch overrides it. Matched by body, a streamed and
// a whole call are different requests for every provider, and a miss
// that differs only so says it; in order they share a route and each
// answer is decoded as recorded (see cassette.RoutePath). A saved request carries its lane
// in the cassette.LaneHeader header; interactions are grouped by lane on save.
//
// Before an exchange is kept, it is redacted (cassette.Redact) and
// scrubbed (cassette.Scrub): a configured secret, a credential it saw in
// a header or a key-shaped string echoed in a body becomes scrub.Marker,
// in the recording and in the answer the agent is served, so recording
// and replaying a run see the same answers. When saving, the recorder
// still refuses to write a file in which one appears (cassette.Write),
// which leaves only secrets inside binary event streams to refuse.
//
// A recording replaces the cassette only when it is fit to replay. A failed
// exchange (an error answer, or no answer at all) that is followed by the
// same request in the same lane was retried, and is dropped: replay never
// retries, so it would hand the failure out as the answer. A failure that
// was never retried, or a recording with no interactions, leaves the file
// byte-identical and Stop returns a *NotSavedError saying why.
//
// A Recorder is safe for concurrent use.
type Recorder struct {
	path       string
	mode       Mode
	modeReason string
	match      cassette.Match
	canon      *cassette.Canon
	cfg        config
	meta       *cassette.Meta
	source     *cassette.Cassette // what was loaded, for line numbers and cached keys
	vcr        *vcrrecorder.Recorder
	calls      atomic.Int64
	pending    sync.Map // call id → captured *vcr.Interaction
	timings    sync.Map // call id → *timing of the exchange being recorded

	// rerecord says why record-missing set a loaded cassette aside (it held
	// error answers or nothing) and records it anew; "" when it did not.
	rerecord string
	existed  bool // a cassette file was there when the recorder opened

	// scrub replaces the configured and environment secrets (and, once
	// seen, the credentials of recorded headers) in what is kept and in
	// the requests replay matches; scrubKey is its scrubKey.
	scrub    *scrub.Scrubber
	scrubKey string

	mu       sync.Mutex
	entries  []*entry
	observed []string // credentials seen in headers while recording
	failures []*failure
	stopped  bool
}

// failure is a recorded exchange that failed: an error answer (entry holds
// it) or a request that got no answer.
type failure struct {
	key      string // lane, method, path, query and canonical body
	what     string
	attempts int
	entry    *entry // nil when no answer came
	retried  bool
}

type entry struct {
	it        *vcr.Interaction
	index     int // position in the loaded file; -1 for new recordings
	lane      string
	method    string
	path      string // as recorded
	matchPath string // what requests match by body (cassette.MatchPath)
	route     string // what requests match in order (cassette.RoutePath)
	query     string
	key       string
	keyDone   bool
	used      bool
	recorded  bool
}

const callHeader = "X-Dageval-Call"

// New opens the cassette at path (conventionally testdata/cassettes/NAME.yaml).
// In replay mode the file must exist; record mode starts empty and
// overwrites it on Stop; record-missing starts from it if it exists.
func New(path string, opts ...Option) (*Recorder, error) {
	cfg := config{getenv: os.Getenv}
	for _, o := range opts {
		o(&cfg)
	}
	mode, reason, err := ResolveMode(cfg.mode, cfg.getenv)
	if err != nil {
		return nil, err
	}
	canon, err := cassette.NewCanon(cfg.ignore...)
	if err != nil {
		return nil, err
	}
	if cfg.match != "" {
		if _, err := cassette.ParseMatch(string(cfg.match)); err != nil {
			return nil, err
		}
	}
	r := &Recorder{path: path, mode: mode, modeReason: reason, canon: canon, cfg: cfg}
	r.scrub = scrub.New(append(slices.Clone(cfg.secrets), cassette.EnvSecrets(cfg.getenv, cfg.secretEnv...)...)...)
	r.scrubKey = scrubKey(r.scrub)
	if mode == ModeLive {
		return r, nil
	}
	if _, err := os.Stat(path); err == nil {
		r.existed = true
	}
	if mode == ModeReplay || mode == ModeRecordMissing {
		c, err := cassette.ReadShared(path)
		switch {
		case errors.Is(err, os.ErrNotExist) && mode == ModeReplay:
			hint := "record it with DAGEVAL_RECORD=1"
			if strings.HasPrefix(reason, "CI=true") {
				hint = "record it outside CI with DAGEVAL_RECORD=1 and commit it"
			}
			return nil, fmt.Errorf("fakes: %w: %s (mode replay: %s; %s)", ErrCassetteNotFound, path, reason, hint)
		case errors.Is(err, os.ErrNotExist):
			// record-missing starts a new cassette
		case err != nil:
			return nil, err
		default:
			r.source = c
			r.meta = c.Meta
			if mode == ModeRecordMissing {
				if r.rerecord = unfit(c); r.rerecord != "" {
					break // recorded anew: replaying it would replay its failures
				}
			}
			for i, it := range c.Interactions {
				r.entries = append(r.entries, newEntry(it, i))
			}
		}
	}
	r.match = cfg.match
	if r.match == "" {
		r.match = cassette.MatchBody
		if r.meta != nil && r.meta.Match != "" {
			r.match = r.meta.Match
		}
	}
	if mode == ModeRecord || mode == ModeRecordMissing {
		// go-vcr reads each answer whole before handing it on, so what
		// arrives from the provider is watched here, under it: a long
		// recorded stream is judged by its silences, not its length.
		real := provider.WatchProgress(&laneStripper{next: cfg.transport, timings: &r.timings})
		r.vcr, err = vcrrecorder.New(path,
			vcrrecorder.WithMode(vcrrecorder.ModeRecordOnly),
			vcrrecorder.WithRealTransport(real),
			vcrrecorder.WithSkipRequestLatency(true),
			vcrrecorder.WithHook(r.capture, vcrrecorder.AfterCaptureHook),
			vcrrecorder.WithFS(discardFS{}), // this Recorder saves, with its own checks
		)
		if err != nil {
			return nil, err
		}
	}
	return r, nil
}

// unfit says why a loaded cassette cannot stand as a recording, or "" when
// it can: it holds no interactions, or error answers that replay would hand
// out as the provider's answers.
func unfit(c *cassette.Cassette) string {
	if len(c.Interactions) == 0 {
		return "it has no interactions"
	}
	var errs []string
	for i, it := range c.Interactions {
		if it.Response.Code >= 400 {
			errs = append(errs, fmt.Sprintf("%d at line %d", it.Response.Code, lineOf(c, i)))
		}
	}
	if len(errs) == 0 {
		return ""
	}
	return fmt.Sprintf("it holds %s (%s)", plural(len(errs), "error answer"), strings.Join(errs, ", "))
}

func lineOf(c *cassette.Cassette, i int) int {
	if c != nil && i >= 0 && i < len(c.Lines) {
		return c.Lines[i]
	}
	return 0
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

func newEntry(it *vcr.Interaction, index int) *entry {
	e := &entry{it: it, index: index, method: it.Request.Method, lane: it.Request.Headers.Get(cassette.LaneHeader)}
	if u, err := url.Parse(it.Request.URL); err == nil {
		e.path, e.route = u.Path, cassette.RoutePath(u.Path)
		e.query = cassette.MatchQuery(u)
	}
	e.matchPath = cassette.MatchPath(e.path)
	return e
}

// TB is the part of a test NewTest uses; *testing.T and *testing.B are
// ones. It is an interface so that programs linking the recorder do not
// link package testing.
type TB interface {
	Helper()
	Name() string
	Cleanup(func())
	Error(args ...any)
	Fatal(args ...any)
}

// NewTest opens the cassette testdata/cassettes/<test name>.yaml for t and
// stops the recorder when the test ends, failing the test when saving
// fails. Re-record with DAGEVAL_RECORD=1 go test -run <test>.
func NewTest(t TB, opts ...Option) *Recorder {
	t.Helper()
	r, err := New(TestCassettePath(t), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := r.Stop(); err != nil {
			t.Error(err)
		}
	})
	return r
}

var unsafePathChars = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[^A-Za-z0-9._/-]+`) })

// TestCassettePath is where NewTest keeps t's cassette: subtests
// become subdirectories and other unsafe characters become "_".
func TestCassettePath(t interface{ Name() string }) string {
	name := unsafePathChars().ReplaceAllString(t.Name(), "_")
	return filepath.Join("testdata", "cassettes", filepath.FromSlash(name)+".yaml")
}

// Mode returns the mode in effect after the environment was applied.
func (r *Recorder) Mode() Mode { return r.mode }

// ModeReason says why Mode is what it is ("default", "CI=true forces replay", …).
func (r *Recorder) ModeReason() string { return r.modeReason }

// Match returns the match mode in effect.
func (r *Recorder) Match() cassette.Match { return r.match }

// Path returns the cassette file.
func (r *Recorder) Path() string { return r.path }

// Client returns an http.Client that sends its requests through the recorder.
func (r *Recorder) Client() *http.Client { return &http.Client{Transport: r} }

// Unplayed returns the indexes of loaded interactions that were never
// replayed, so a test can insist that a run used its whole cassette.
func (r *Recorder) Unplayed() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []int
	for _, e := range r.entries {
		if !e.recorded && !e.used {
			out = append(out, e.index)
		}
	}
	return out
}

// VerifyPlayed returns an *UnplayedError when interactions loaded from the
// cassette were never replayed: the run made fewer calls than were
// recorded, so the agent's behaviour changed since the recording. It
// returns nil in record and live modes, which load nothing to play.
func (r *Recorder) VerifyPlayed() error {
	idx := r.Unplayed()
	if len(idx) == 0 {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	e := &UnplayedError{Cassette: r.path}
	byIndex := map[int]*entry{}
	for _, en := range r.entries {
		byIndex[en.index] = en
	}
	for _, i := range idx {
		en := byIndex[i]
		e.Calls = append(e.Calls, UnplayedCall{Index: i, Line: lineOf(r.source, i), Lane: en.lane, Method: en.method, Path: en.path})
	}
	return e
}

// UnplayedError reports recorded calls a run never made.
type UnplayedError struct {
	Cassette string
	// Calls are the unplayed interactions in cassette order.
	Calls []UnplayedCall
}

// UnplayedCall is one recorded interaction that was never replayed.
type UnplayedCall struct {
	// Index is the interaction's position in the cassette, from 0.
	Index int
	// Line is where it starts in the file (0 when unknown).
	Line         int
	Lane         string
	Method, Path string
}

func (e *UnplayedError) Error() string {
	first := e.Calls[0]
	where := fmt.Sprintf("%s %s #%d", first.Method, first.Path, first.Index+1)
	if first.Lane != "" {
		where += fmt.Sprintf(" in lane %q", first.Lane)
	}
	if first.Line > 0 {
		where += fmt.Sprintf(", line %d", first.Line)
	}
	n := len(e.Calls)
	calls := "recorded calls"
	if n == 1 {
		calls = "recorded call"
	}
	return fmt.Sprintf("cassette %s has %d %s the agent never made (first: %s) — the agent's behaviour changed; re-record with DAGEVAL_RECORD=1", e.Cassette, n, calls, where)
}

// RoundTrip implements http.RoundTripper.
func (r *Recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	if r.mode == ModeLive {
		return r.realTransport().RoundTrip(req)
	}
	body, err := readBody(req)
	if err != nil {
		return nil, err
	}
	if err := req.Context().Err(); err != nil {
		return nil, err
	}
	r.mu.Lock()
	stopped := r.stopped
	r.mu.Unlock()
	if stopped {
		return nil, ErrStopped
	}
	lane := LaneOf(req.Context())
	if r.mode != ModeRecord {
		// Recordings keep requests scrubbed, so a request is matched as
		// it would have been kept: a tool result that prints a key finds
		// the interaction recorded with the key replaced.
		r.mu.Lock()
		sc, key := r.scrub, r.scrubKey
		r.mu.Unlock()
		kept, mreq := cleanBodies.scrub(sc, key, body), req
		if u := req.URL.String(); sc.String(u) != u {
			if su, err := url.Parse(sc.String(u)); err == nil {
				mreq = req.Clone(req.Context())
				mreq.URL = su
			}
		}
		if resp := r.replay(mreq, lane, kept); resp != nil {
			return resp, nil
		}
		if r.mode == ModeReplay {
			return nil, r.miss(mreq, lane, kept)
		}
	}
	return r.record(req, lane, body)
}

func (r *Recorder) realTransport() http.RoundTripper {
	if r.cfg.transport != nil {
		return r.cfg.transport
	}
	return http.DefaultTransport
}

// maxSizedBody bounds the allocation made up front from a request's
// Content-Length.
const maxSizedBody = 64 << 20

func readBody(req *http.Request) ([]byte, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return nil, nil
	}
	defer req.Body.Close()
	if n := req.ContentLength; n > 0 && n <= maxSizedBody {
		// One allocation of the announced size instead of io.ReadAll's
		// doubling, which tripled what a replayed run allocated here.
		b := make([]byte, n)
		if _, err := io.ReadFull(req.Body, b); err != nil {
			return nil, fmt.Errorf("fakes: reading request body: %w", err)
		}
		var extra [1]byte
		if m, _ := req.Body.Read(extra[:]); m == 0 {
			return b, nil
		}
		rest, err := io.ReadAll(req.Body)
		if err != nil {
			return nil, fmt.Errorf("fakes: reading request body: %w", err)
		}
		return append(append(b, extra[0]), rest...), nil
	}
	b, err := io.ReadAll(req.Body)
	if err != nil {
		return nil, fmt.Errorf("fakes: reading request body: %w", err)
	}
	return b, nil
}

// replay hands out the first unused interaction of the lane that matches.
func (r *Recorder) replay(req *http.Request, lane string, body []byte) *http.Response {
	r.mu.Lock()
	defer r.mu.Unlock()
	var reqKey string
	keyed := false
	route := cassette.RoutePath(req.URL.Path)
	for _, e := range r.entries {
		if e.used || (e.lane != lane && e.lane != "") || e.method != req.Method || e.route != route {
			continue
		}
		if r.match == cassette.MatchBody {
			// The path as MatchPath gives it: Gemini's, Bedrock's and
			// Vertex AI's whole and streamed calls differ only there, and
			// by body they are told apart as the other providers' are by
			// their "stream" field (see cassette.RoutePath).
			if e.matchPath != cassette.MatchPath(req.URL.Path) || e.query != cassette.MatchQuery(req.URL) {
				continue
			}
			if e.it.Request.Body != string(body) { // compared in place, without copying either side
				if !keyed {
					reqKey, keyed = r.canon.Key(body), true
				}
				if !e.keyDone {
					if e.index >= 0 && r.source != nil {
						e.key = r.source.RequestKey(e.index, r.canon)
					} else {
						e.key = r.canon.Key([]byte(e.it.Request.Body))
					}
					e.keyDone = true
				}
				if e.key != reqKey {
					continue
				}
			}
		}
		e.used = true
		return serve(req, e.it)
	}
	return nil
}

// serve builds the response to req from a recorded interaction, telling the
// adapters its recorded duration.
func serve(req *http.Request, it *vcr.Interaction) *http.Response {
	resp := cassette.Response(req, it)
	d := "unknown"
	if it.Response.Duration > 0 {
		d = it.Response.Duration.String()
	}
	resp.Header.Set(provider.DurationHeader, d)
	return resp
}

// record sends the request through the go-vcr recorder, which captures the
// exchange; capture redacts it before it is kept.
func (r *Recorder) record(req *http.Request, lane string, body []byte) (*http.Response, error) {
	key := lane + "\x00" + req.Method + " " + req.URL.Path + "?" + cassette.MatchQuery(req.URL) + "\x00" + r.canon.Key(body)
	attempts := r.supersede(key) + 1
	id := strconv.FormatInt(r.calls.Add(1), 10)
	out := req.Clone(req.Context())
	if req.Body != nil {
		out.Body = io.NopCloser(bytes.NewReader(body))
		out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		out.ContentLength = int64(len(body))
	}
	out.Header.Set(callHeader, id)
	if lane != "" {
		out.Header.Set(cassette.LaneHeader, lane)
	}
	resp, err := r.vcr.RoundTrip(out)
	captured, ok := r.pending.LoadAndDelete(id)
	if err != nil {
		what := err.Error()
		if cause := context.Cause(req.Context()); cause != nil {
			what = cause.Error()
		}
		r.mu.Lock()
		r.failures = append(r.failures, &failure{key: key, what: req.Method + " " + req.URL.Path + ": " + what, attempts: attempts})
		r.mu.Unlock()
		return nil, err
	}
	resp.Body.Close()
	if !ok {
		return nil, fmt.Errorf("fakes: internal error: exchange %s was not captured", id)
	}
	it := captured.(*vcr.Interaction)
	e := newEntry(it, -1)
	e.used, e.recorded = true, true
	r.mu.Lock()
	r.entries = append(r.entries, e)
	if it.Response.Code >= 400 {
		r.failures = append(r.failures, &failure{key: key, what: fmt.Sprintf("%s %s: %s", req.Method, req.URL.Path, it.Response.Status), attempts: attempts, entry: e})
	}
	r.mu.Unlock()
	return serve(req, it), nil
}

// supersede marks the failures of an earlier attempt of the same request
// as retried and drops their error answers from the recording, and returns
// how many attempts came before this one.
func (r *Recorder) supersede(key string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, f := range r.failures {
		if f.retried || f.key != key {
			continue
		}
		f.retried = true
		n = max(n, f.attempts)
		if f.entry != nil {
			r.entries = slices.DeleteFunc(r.entries, func(e *entry) bool { return e == f.entry })
		}
	}
	return n
}

// providerErrors describes the failures no later attempt retried.
func (r *Recorder) providerErrors() (n int, desc string) {
	var parts []string
	for _, f := range r.failures {
		if f.retried {
			continue
		}
		d := f.what
		if f.attempts > 1 {
			d += fmt.Sprintf(", after %d attempts", f.attempts)
		}
		parts = append(parts, d)
	}
	if len(parts) == 0 {
		return 0, ""
	}
	shown := parts
	if len(shown) > 3 {
		shown = append(slices.Clone(shown[:3]), fmt.Sprintf("… and %d more", len(parts)-3))
	}
	return len(parts), fmt.Sprintf("the recording had %s (%s)", plural(len(parts), "provider error"), strings.Join(shown, "; "))
}

// capture runs inside go-vcr right after an exchange was captured, before
// the interaction is stored anywhere: it redacts credentials and drops what
// would make the file differ between recordings.
func (r *Recorder) capture(i *vcr.Interaction) error {
	id := i.Request.Headers.Get(callHeader)
	i.Request.Headers = i.Request.Headers.Clone()
	i.Request.Headers.Del(callHeader)
	seen := cassette.Redact(i, r.cfg.redactHeaders)
	i.Response.Duration = 0
	i.Response.Headers.Del(provider.DurationHeader)
	i.Response.Headers.Del(provider.FirstEventHeader)
	if t, ok := r.timings.LoadAndDelete(id); ok && !r.cfg.noLatency {
		d, first := t.(*timing).result()
		i.Response.Duration = d
		if first > 0 && provider.IsEventStream(i.Response.Headers.Get("Content-Type")) {
			i.Response.Headers.Set(provider.FirstEventHeader, first.String())
		}
	}
	if host := r.cfg.recordedHost; host != "" {
		if u, err := url.Parse(i.Request.URL); err == nil {
			u.Host = host
			i.Request.URL = u.String()
		}
		i.Request.Host = host
	}
	r.mu.Lock()
	r.observed = append(r.observed, seen...)
	if len(seen) > 0 {
		// The bare credential, without its auth scheme: what a replay,
		// which sees no headers, scrubs from the text around it.
		bare := make([]string, 0, len(seen))
		for _, v := range seen {
			if scheme, rest, ok := strings.Cut(v, " "); ok && rest != "" && !strings.ContainsAny(scheme, "=:") {
				v = rest
			}
			bare = append(bare, v)
		}
		r.scrub = r.scrub.With(bare...)
		r.scrubKey = scrubKey(r.scrub)
	}
	sc := r.scrub
	r.mu.Unlock()
	// What is kept is also what the agent is served (see record), so a
	// recorded run sees the answers a replay will.
	cassette.Scrub(i, sc)
	r.pending.Store(id, i)
	return nil
}

// Stop ends the session. In record and record-missing modes it saves the
// cassette when the recording is fit to replay; otherwise it returns a
// *NotSavedError and leaves the file byte-identical: when a provider failure
// was never retried, when a record-mode session recorded nothing, or, with
// a *cassette.SecretError, when a secret would be written.
func (r *Recorder) Stop() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped {
		return nil
	}
	r.stopped = true
	switch r.mode {
	case ModeRecord, ModeRecordMissing:
	default:
		return nil
	}
	if n, desc := r.providerErrors(); n > 0 {
		return r.notSaved(desc)
	}
	recorded := slices.ContainsFunc(r.entries, func(e *entry) bool { return e.recorded })
	switch {
	case r.mode == ModeRecordMissing && !recorded && r.rerecord == "":
		return nil // nothing was missing
	case len(r.entries) == 0:
		return r.notSaved("the recording has no interactions: no call reached the provider")
	}
	c := &cassette.Cassette{Version: vcr.CassetteFormatVersion, Meta: r.meta, Path: r.path}
	if r.mode == ModeRecord {
		c.Meta = nil
		if r.cfg.match == cassette.MatchOrder {
			c.Meta = &cassette.Meta{Match: cassette.MatchOrder}
		}
	}
	for _, e := range r.entries {
		if e.recorded {
			// A credential first seen in a later exchange's headers may
			// be echoed in an earlier one.
			cassette.Scrub(e.it, r.scrub)
		}
		c.Interactions = append(c.Interactions, e.it)
	}
	return r.save(c)
}

// Abandon ends the session without saving, for a run that failed in a way
// the recorder cannot see (the provider error surfaced inside a stream, the
// run was cancelled or cut short). In the recording modes it returns a
// *NotSavedError with reason (and the recording's own provider errors, if
// any); otherwise nil.
func (r *Recorder) Abandon(reason string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped {
		return nil
	}
	r.stopped = true
	if r.mode != ModeRecord && r.mode != ModeRecordMissing {
		return nil
	}
	if n, desc := r.providerErrors(); n > 0 {
		reason += "; " + desc
	}
	return r.notSaved(reason)
}

func (r *Recorder) notSaved(reason string) *NotSavedError {
	return &NotSavedError{Path: r.path, Kept: r.existed, Reason: reason}
}

// NotSavedError reports a recording that was not saved because replaying
// it would not reproduce the run; the cassette file is as it was.
type NotSavedError struct {
	Path string
	// Kept reports whether there was a previous cassette (now unchanged).
	Kept bool
	// Reason says what was wrong with the recording.
	Reason string
}

func (e *NotSavedError) Error() string {
	if e.Kept {
		return fmt.Sprintf("kept the previous cassette %s: %s", e.Path, e.Reason)
	}
	return fmt.Sprintf("wrote no cassette %s: %s", e.Path, e.Reason)
}

func (r *Recorder) secretValues() []string {
	vals := append(slices.Clone(r.cfg.secrets), r.observed...)
	return append(vals, cassette.EnvSecrets(r.cfg.getenv, r.cfg.secretEnv...)...)
}

func (r *Recorder) save(c *cassette.Cassette) error {
	err := cassette.Write(r.path, c, r.secretValues())
	var secret *cassette.SecretError
	if err == nil || errors.As(err, &secret) {
		return err
	}
	return fmt.Errorf("fakes: writing cassette: %w", err)
}

// laneStripper removes dageval's bookkeeping headers before a recorded
// request leaves the process, and times the exchange for the interaction.
type laneStripper struct {
	next    http.RoundTripper
	timings *sync.Map
}

func (s *laneStripper) RoundTrip(req *http.Request) (*http.Response, error) {
	id := req.Header.Get(callHeader)
	out := req.Clone(req.Context())
	out.Header.Del(callHeader)
	out.Header.Del(cassette.LaneHeader)
	next := s.next
	if next == nil {
		next = http.DefaultTransport
	}
	t := &timing{start: time.Now()}
	resp, err := next.RoundTrip(out)
	if err != nil {
		return nil, err
	}
	resp.Body = &timedBody{ReadCloser: resp.Body, t: t}
	s.timings.Store(id, t)
	return resp, nil
}

// timing is how long one recorded exchange took. go-vcr reads the whole
// body before the capture hook runs, so by then the body's first and last
// reads are known.
type timing struct {
	mu                sync.Mutex
	start, first, end time.Time
}

// result returns the exchange's duration and the time to its first body
// byte, rounded to milliseconds: finer digits are noise and would only make
// cassettes differ.
func (t *timing) result() (duration, first time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	end := t.end
	if end.IsZero() {
		end = time.Now()
	}
	duration = max(end.Sub(t.start).Round(time.Millisecond), time.Millisecond)
	if !t.first.IsZero() {
		first = max(t.first.Sub(t.start).Round(time.Millisecond), time.Millisecond)
	}
	return duration, first
}

type timedBody struct {
	io.ReadCloser
	t *timing
}

func (b *timedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	now := time.Now()
	b.t.mu.Lock()
	if n > 0 && b.t.first.IsZero() {
		b.t.first = now
	}
	if err != nil && b.t.end.IsZero() {
		b.t.end = now
	}
	b.t.mu.Unlock()
	return n, err
}

// discardFS keeps go-vcr's own recorder from touching the disk.
type discardFS struct{}

func (discardFS) ReadFile(name string) ([]byte, error)     { return nil, os.ErrNotExist }
func (discardFS) WriteFile(name string, data []byte) error { return nil }
func (discardFS) IsFileExists(name string) bool            { return false }

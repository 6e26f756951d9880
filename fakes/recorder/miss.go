package recorder

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/aymanbagabas/go-udiff"

	"github.com/dageval/dageval/fakes/cassette"
)

// maxDiffLines bounds the diff in a miss error; past it the diff is cut.
const maxDiffLines = 150

// MissError is a replay request that no recorded interaction answers. It
// names the request and, when the cassette has a similar interaction, shows
// how the request differs from it.
type MissError struct {
	Cassette string
	Match    cassette.Match
	Lane     string
	Method   string
	URL      string
	// Body is the request body as matched: canonical JSON, indented.
	Body string
	// Nearest is the index of the most similar recorded interaction, -1 if none.
	Nearest int
	// NearestNote says what the nearest interaction is (its line, lane, whether it was already replayed).
	NearestNote string
	// Diff is a unified diff from the nearest interaction's body to the request's.
	Diff string
	// Summary explains the miss in one sentence.
	Summary string
}

func (e *MissError) Unwrap() error { return ErrInteractionNotFound }

func (e *MissError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "fakes: replay miss in %s: no recorded interaction matches %s %s (lane %q, match %s)\n", e.Cassette, e.Method, e.URL, e.Lane, e.Match)
	if e.Summary != "" {
		b.WriteString(e.Summary + "\n")
	}
	if e.Nearest >= 0 {
		fmt.Fprintf(&b, "nearest recorded interaction: %d (%s)\n", e.Nearest, e.NearestNote)
		if e.Diff != "" {
			b.WriteString("diff from the recorded request body to this request's:\n")
			b.WriteString(e.Diff)
		} else if e.Match == cassette.MatchBody {
			b.WriteString("the bodies are equal; the method, path or query differ\n")
		}
	} else {
		b.WriteString("request body:\n")
		b.WriteString(clipLines(e.Body, maxDiffLines))
	}
	b.WriteString("to re-record: DAGEVAL_RECORD=1 (everything) or DAGEVAL_RECORD=missing (only what is missing)")
	return b.String()
}

func clipLines(s string, n int) string {
	lines := strings.SplitAfter(s, "\n")
	if len(lines) <= n {
		if s != "" && !strings.HasSuffix(s, "\n") {
			s += "\n"
		}
		return s
	}
	return strings.Join(lines[:n], "") + fmt.Sprintf("… (%d more lines)\n", len(lines)-n)
}

// miss builds the error for an unanswered request.
func (r *Recorder) miss(req *http.Request, lane string, body []byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := &MissError{Cassette: r.path, Match: r.match, Lane: lane, Method: req.Method, URL: req.URL.String(), Nearest: -1}
	if u := *req.URL; u.RawQuery != "" {
		e.URL = cassette.RedactURL(u.String())
	}
	e.Body = r.canon.Indent(body)

	route := cassette.RoutePath(req.URL.Path)
	sameRoute := func(x *entry) bool { return x.method == req.Method && x.route == route }
	laneOK := func(x *entry) bool { return x.lane == lane || x.lane == "" }
	tiers := []struct {
		pick    func(*entry) bool
		summary string
	}{
		{func(x *entry) bool { return !x.used && laneOK(x) && sameRoute(x) }, ""},
		{func(x *entry) bool { return x.used && laneOK(x) && sameRoute(x) }, fmt.Sprintf("every interaction for %s %s in lane %q was already replayed: the run made more calls than were recorded.", req.Method, req.URL.Path, lane)},
		{func(x *entry) bool { return !x.used && sameRoute(x) }, fmt.Sprintf("the cassette has unused interactions for %s %s, but in other lanes: the calls run under a different lane than when they were recorded (see recorder.WithLane).", req.Method, req.URL.Path)},
	}
	for _, tier := range tiers {
		var cands []*entry
		for _, x := range r.entries {
			if tier.pick(x) {
				cands = append(cands, x)
			}
		}
		if len(cands) == 0 {
			continue
		}
		best, bestEdits := cands[0], -1
		var bestOld string
		for _, x := range cands {
			old := r.canon.Indent([]byte(x.it.Request.Body))
			n := len(udiff.Lines(old, e.Body))
			if bestEdits < 0 || n < bestEdits {
				best, bestEdits, bestOld = x, n, old
			}
			if r.match == cassette.MatchOrder {
				break // order mode answers with the first candidate, so that is the one to compare
			}
		}
		e.Summary = tier.summary
		if r.match == cassette.MatchBody {
			if rec, now, only := r.onlyStreamDiffers([]byte(best.it.Request.Body), body); only {
				e.Summary = strings.TrimSpace(e.Summary + " " + streamHint(best.index, rec, now, ""))
			} else if rec, now, only := r.onlyPathStreamDiffers(best, req.URL.Path, body); only {
				name, method := pathStreaming(req.URL.Path)
				where := fmt.Sprintf("%s asks for a stream in the path: the recording called %s, this run calls %s.", name, method(rec), method(now))
				e.Summary = strings.TrimSpace(e.Summary + " " + streamHint(best.index, rec, now, where))
			}
		}
		e.Nearest = best.index
		note := []string{}
		if r.source != nil && best.index >= 0 && best.index < len(r.source.Lines) && r.source.Lines[best.index] > 0 {
			note = append(note, fmt.Sprintf("%s:%d", r.path, r.source.Lines[best.index]))
		}
		if best.index < 0 {
			note = append(note, "recorded in this session")
		}
		note = append(note, fmt.Sprintf("lane %q", best.lane))
		if best.used {
			note = append(note, "already replayed")
		} else {
			note = append(note, "not yet replayed")
		}
		if q := best.query; q != cassette.MatchQuery(req.URL) {
			note = append(note, fmt.Sprintf("query %q", q))
		}
		e.NearestNote = strings.Join(note, ", ")
		if bestOld != e.Body {
			edits := udiff.Lines(bestOld, e.Body)
			d, err := udiff.ToUnified(fmt.Sprintf("recorded interaction %d", best.index), "request", bestOld, edits, 3)
			if err == nil {
				e.Diff = clipLines(d, maxDiffLines)
			}
		}
		return e
	}
	if len(r.entries) == 0 {
		e.Summary = "the cassette has no interactions."
	} else {
		var routes []string
		for _, x := range r.entries {
			if rt := x.method + " " + x.path; !slices.Contains(routes, rt) {
				routes = append(routes, rt)
			}
		}
		slices.Sort(routes)
		e.Summary = fmt.Sprintf("the cassette has no interaction for %s %s; its %d interactions are for %s.", req.Method, req.URL.Path, len(r.entries), strings.Join(routes, ", "))
	}
	return e
}

// onlyStreamDiffers reports whether two request bodies differ only in
// whether they ask for a stream ("stream" and the "stream_options" that go
// with it), and what each asked.
func (r *Recorder) onlyStreamDiffers(recorded, request []byte) (recStream, reqStream, only bool) {
	strip := func(b []byte) (string, bool, bool) {
		var m map[string]json.RawMessage
		if json.Unmarshal(b, &m) != nil || m == nil {
			return "", false, false
		}
		stream := string(m["stream"]) == "true"
		delete(m, "stream")
		delete(m, "stream_options")
		out, err := json.Marshal(m)
		if err != nil {
			return "", false, false
		}
		return r.canon.Key(out), stream, true
	}
	a, recStream, ok1 := strip(recorded)
	b, reqStream, ok2 := strip(request)
	return recStream, reqStream, ok1 && ok2 && recStream != reqStream && a == b
}

// onlyPathStreamDiffers reports whether a request differs from a recorded
// one only in whether it streams, where the path says it (Gemini's
// :streamGenerateContent, Bedrock's invoke-with-response-stream, Vertex
// AI's :streamRawPredict), and what each asked.
func (r *Recorder) onlyPathStreamDiffers(x *entry, path string, body []byte) (recStream, reqStream, only bool) {
	recStream, reqStream = cassette.IsStreamPath(x.path), cassette.IsStreamPath(path)
	if recStream == reqStream || x.route != cassette.RoutePath(path) {
		return false, false, false
	}
	return recStream, reqStream, r.canon.Key([]byte(x.it.Request.Body)) == r.canon.Key(body)
}

// pathStreaming names the provider of a path that says whether to stream,
// and its whole and streamed methods.
func pathStreaming(path string) (name string, method func(stream bool) string) {
	pick := func(whole, streamed string) func(bool) string {
		return func(stream bool) string {
			if stream {
				return streamed
			}
			return whole
		}
	}
	switch cassette.APIOf(path) {
	case cassette.APIBedrockInvoke:
		return "Bedrock", pick("/invoke", "/invoke-with-response-stream")
	case cassette.APIVertexAnthropic:
		return "Vertex AI", pick(":rawPredict", ":streamRawPredict")
	}
	return "Gemini", pick(":generateContent", ":streamGenerateContent")
}

// streamHint tells the user that the run calls the model differently from
// how it was recorded, and how to make them agree; where, if not "", says
// where the request tells them apart.
func streamHint(index int, recorded, now bool, where string) string {
	how := map[bool]string{true: "streamed", false: "not streamed"}
	if where != "" {
		where += " "
	}
	return fmt.Sprintf("The request differs from recorded interaction %d only in `stream`: the recording was %s (stream: %v) and this run's call is %s (stream: %v). %s"+
		"Call the model the way it was recorded: set `stream: %v` on the model in the suite's models list (models: [{spec: provider:model, stream: %v}]), on the profile, or at the top of the suite; "+
		"or re-record with DAGEVAL_RECORD=1, or replay in order (match: order), which ignores request bodies.",
		index, how[recorded], recorded, how[now], now, where, recorded, recorded)
}

package evals

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/internal/scrub"
	"github.com/dageval/dageval/rubrics"
)

// roundTrip is what reading r back from its result line gives.
func roundTrip(t testing.TB, r *CellResult) CellResult {
	t.Helper()
	line, err := encodeJSON(r, false)
	require.NoError(t, err)
	var out CellResult
	require.NoError(t, json.Unmarshal(line, &out))
	return out
}

// checkDecodedCopy fails unless decodedCopy of r, when it takes r, is
// the round trip of r and shares no slice or pointer with r; it reports
// whether decodedCopy took r.
func checkDecodedCopy(t testing.TB, name string, r *CellResult) bool {
	t.Helper()
	var got CellResult
	if !decodedCopy(r, &got) {
		return false
	}
	want := roundTrip(t, r)
	if !reflect.DeepEqual(want, got) {
		require.Equal(t, want, got, "%s: decodedCopy is not the round trip", name)
		t.Fatalf("%s: decodedCopy is not the round trip (equal but for what only reflect.DeepEqual sees)\nwant %#v\ngot  %#v", name, want, got)
	}
	if p := sharedReference(reflect.ValueOf(r).Elem(), reflect.ValueOf(&got).Elem()); p != "" {
		t.Fatalf("%s: decodedCopy shares %s with the result it copies", name, p)
	}
	return true
}

// sharedReference names a slice or pointer of b that points where one of
// a does; "" when none does. Strings, immutable, may be shared.
func sharedReference(a, b reflect.Value) string {
	seen := map[uintptr]string{}
	var walk func(v reflect.Value, path string, record bool) string
	walk = func(v reflect.Value, path string, record bool) string {
		switch v.Kind() {
		case reflect.Pointer, reflect.Slice:
			if v.IsNil() || v.Kind() == reflect.Slice && v.Cap() == 0 {
				return ""
			}
			if record {
				seen[v.Pointer()] = path
			} else if p, ok := seen[v.Pointer()]; ok {
				return path + " (" + p + ")"
			}
			if v.Kind() == reflect.Pointer {
				return walk(v.Elem(), path, record)
			}
			for i := range v.Len() {
				if p := walk(v.Index(i), fmt.Sprintf("%s[%d]", path, i), record); p != "" {
					return p
				}
			}
		case reflect.Struct:
			for i := range v.NumField() {
				if p := walk(v.Field(i), path+"."+v.Type().Field(i).Name, record); p != "" {
					return p
				}
			}
		}
		return ""
	}
	walk(a, "", true)
	return walk(b, "", false)
}

// tricky floats and ints: what a round trip could get wrong.
var (
	trickyFloats = []float64{0, math.Copysign(0, -1), 1, 0.1, 1.0 / 3, 0.375, 1e21, 1e20, 3.25e-9, 5e-324, math.MaxFloat64, -math.SmallestNonzeroFloat64, 123456789012345678}
	trickyInts   = []int64{0, 1, -1, 1 << 53, 1<<53 + 1, math.MaxInt64, math.MinInt64}
)

// fillRandom sets v (settable) to a random value of its type: every
// field of every struct, slices nil, empty or not, pointers nil or not,
// strings from str. Filled by reflection, a field added to CellResult is
// filled too, and TestDecodedCopyIsTheRoundTrip sees whether
// decodedCopy copies it right.
func fillRandom(r *rand.Rand, v reflect.Value, str func() string) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(str())
	case reflect.Bool:
		v.SetBool(r.IntN(2) == 0)
	case reflect.Int, reflect.Int64, reflect.Int32:
		n := trickyInts[r.IntN(len(trickyInts))]
		if v.OverflowInt(n) {
			n = int64(r.IntN(1000)) - 500
		}
		v.SetInt(n)
	case reflect.Float64:
		v.SetFloat(trickyFloats[r.IntN(len(trickyFloats))])
	case reflect.Pointer:
		if r.IntN(3) > 0 {
			p := reflect.New(v.Type().Elem())
			fillRandom(r, p.Elem(), str)
			v.Set(p)
		}
	case reflect.Slice:
		switch r.IntN(4) {
		case 0: // nil
		case 1:
			v.Set(reflect.MakeSlice(v.Type(), 0, r.IntN(3)))
		default:
			n := 1 + r.IntN(3)
			s := reflect.MakeSlice(v.Type(), n, n+r.IntN(2))
			for i := range n {
				fillRandom(r, s.Index(i), str)
			}
			v.Set(s)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fillRandom(r, v.Field(i), str)
			}
		}
	default:
		panic("fillRandom: a " + v.Type().String() + " in CellResult: teach fillRandom and decodedCopy about it")
	}
}

func randomResult(r *rand.Rand, str func() string) *CellResult {
	res := new(CellResult)
	fillRandom(r, reflect.ValueOf(res).Elem(), str)
	return res
}

// validTricky are the pieces of tricky that are valid UTF-8, for cells
// decodedCopy takes.
func validTricky(r *rand.Rand) string {
	for {
		if s := trickyString(r); utf8.ValidString(s) {
			return s
		}
	}
}

// decodedCopy gives what json.Unmarshal of the result's line gives, for
// the live and errored cells of the encoder's tests, cells with tricky
// strings, empty and nil slices everywhere, and random ones, and it
// declines the cells whose strings are not valid UTF-8.
func TestDecodedCopyIsTheRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(18, 12))
	type namedResult struct {
		name string
		r    *CellResult
	}
	var cases []namedResult
	_, live := liveCell(func() string { return "notes about <b>naïve</b> & \"quoted\" things" })
	cases = append(cases, namedResult{"live", live})
	cases = append(cases, namedResult{"errored", &CellResult{CellKey: CellKey{Case: "c", Model: "m", Profile: "p", Epoch: 1}, ID: "c--m--p--e1", Status: StatusError,
		Error: "replay miss: <no interaction> for \"POST /v1/chat\"\n\tdiff: é", Cause: "replay_miss", Checks: []rubrics.CheckVerdict{}, ToolCalls: []string{}, CostKnown: true}})
	cases = append(cases, namedResult{"zero", &CellResult{}})
	empty := *live
	empty.Tags, empty.Checks, empty.ToolCalls, empty.Warnings, empty.RateLimits = []string{}, []rubrics.CheckVerdict{}, []string{}, []string{}, []RateLimitCount{}
	rubric := *live.Rubric
	rubric.Criteria = rubric.Criteria[:0]
	empty.Rubric, empty.Latency = &rubric, &Latency{}
	cases = append(cases, namedResult{"empty slices", &empty})
	for range 300 {
		_, res := liveCell(func() string { return validTricky(r) })
		cases = append(cases, namedResult{"live, tricky", res})
	}
	for range 2000 {
		cases = append(cases, namedResult{"random", randomResult(r, func() string { return validTricky(r) })})
	}
	for i, c := range cases {
		require.True(t, checkDecodedCopy(t, fmt.Sprintf("cell %d (%s)", i, c.name), c.r), "cell %d (%s): declined, though its strings are valid", i, c.name)
	}
	for _, bad := range []func(*CellResult){
		func(r *CellResult) { r.Case = "a\xffb" },
		func(r *CellResult) { r.Tags = []string{"ok", "\xe2\x82"} },
		func(r *CellResult) { r.Checks[1].Detail = "\xff" },
		func(r *CellResult) { r.Rubric.Criteria[1].Gap = "\xed\xa0\x80" }, // a surrogate, as Go's UTF-8 refuses it
		func(r *CellResult) { r.RateLimits[0].Provider = "\x80" },
		func(r *CellResult) { r.Warnings = []string{"\xc3"} },
	} {
		_, res := liveCell(func() string { return "x" })
		bad(res)
		assert.False(t, checkDecodedCopy(t, "invalid UTF-8", res), "a cell with invalid UTF-8 is left to json.Unmarshal")
	}
}

// The fields decodedCopy knows: a field added to CellResult or to a type
// in it changes this list, and then decodedCopy must be checked for it
// (a new slice or pointer needs copying, a new string the UTF-8 check).
func TestDecodedCopyKnowsEveryField(t *testing.T) {
	var lines []string
	seen := map[reflect.Type]bool{}
	var list func(t reflect.Type)
	list = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || seen[t] {
			return
		}
		seen[t] = true
		for i := range t.NumField() {
			f := t.Field(i)
			lines = append(lines, fmt.Sprintf("%s.%s %s %s", t.Name(), f.Name, f.Type, f.Tag))
			list(f.Type)
		}
	}
	list(reflect.TypeFor[CellResult]())
	assert.Equal(t, `CellResult.CellKey evals.CellKey 
CellKey.Case string json:"case"
CellKey.Model string json:"model"
CellKey.Profile string json:"profile"
CellKey.Epoch int json:"epoch"
CellResult.ID string json:"id"
CellResult.Tags []string json:"tags,omitempty"
CellResult.Status evals.Status json:"status"
CellResult.Score float64 json:"score"
CellResult.Rubric *evals.RubricOutcome json:"rubric,omitempty"
RubricOutcome.Result string json:"result"
RubricOutcome.Iterations int json:"iterations"
RubricOutcome.Explanation string json:"explanation,omitempty"
RubricOutcome.Criteria []middleware.CriterionVerdict json:"criteria"
CriterionVerdict.Name string json:"name"
CriterionVerdict.Passed bool json:"passed"
CriterionVerdict.Gap string json:"gap,omitempty"
RubricOutcome.Score float64 json:"score"
CellResult.Checks []rubrics.CheckVerdict json:"checks"
CheckVerdict.Name string json:"name"
CheckVerdict.Passed bool json:"passed"
CheckVerdict.Score float64 json:"score"
CheckVerdict.Detail string json:"detail,omitempty"
CheckVerdict.Informational bool json:"-"
CellResult.Usage rubrics.RoleUsage json:"usage"
RoleUsage.Agent llm.Usage json:"agent"
Usage.InputTokens int json:"input_tokens"
Usage.OutputTokens int json:"output_tokens"
Usage.CacheReadTokens int json:"cache_read_tokens,omitempty"
Usage.CacheWriteTokens int json:"cache_write_tokens,omitempty"
Usage.UnknownCalls int json:"unknown_calls,omitempty"
RoleUsage.Subagents llm.Usage json:"subagents"
RoleUsage.Grader llm.Usage json:"grader"
CellResult.CostUSD float64 json:"cost_usd"
CellResult.CostKnown bool json:"cost_known"
CellResult.Latency *evals.Latency json:"latency,omitempty"
Latency.Calls int json:"calls"
Latency.Timed int json:"timed"
Latency.ModelMS int64 json:"model_ms"
Latency.FirstEventMS int64 json:"first_event_ms,omitempty"
Latency.Recorded bool json:"recorded"
CellResult.Steps int json:"steps"
CellResult.ToolCalls []string json:"tool_calls"
CellResult.DurationMS int64 json:"duration_ms"
CellResult.Error string json:"error,omitempty"
CellResult.Warnings []string json:"warnings,omitempty"
CellResult.Cause evals.Cause json:"cause,omitempty"
CellResult.Alias string json:"alias,omitempty"
CellResult.RateLimits []evals.RateLimitCount json:"rate_limits,omitempty"
RateLimitCount.Provider string json:"provider"
RateLimitCount.Throttled int json:"throttled,omitempty"
RateLimitCount.Waits int json:"waits,omitempty"
RateLimitCount.WaitMS int64 json:"wait_ms,omitempty"`, strings.Join(lines, "\n"))
}

// A worker's kept result is its journal line decoded, whether copied or,
// for a cell with invalid UTF-8, decoded.
func TestCellDecodedIsTheLineDecoded(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for i := range 200 {
		str := func() string { return validTricky(r) }
		if i%2 == 1 {
			str = func() string { return trickyString(r) }
		}
		d, _ := liveCell(str)
		if i%3 == 0 {
			d.Result = *randomResult(r, str)
			d.Result.ID = fmt.Sprintf("cell-%d", i)
		}
		dir := t.TempDir()
		o, err := openOutDir(dir, 1, false)
		require.NoError(t, err)
		var got CellResult
		require.NoError(t, o.cellDecoded(0, d, &got))
		o.j.close()
		line, err := os.ReadFile(filepath.Join(dir, PartialResultsFile))
		require.NoError(t, err)
		var want CellResult
		require.NoError(t, json.Unmarshal(resultLine(line), &want))
		require.True(t, reflect.DeepEqual(want, got), "cell %d: kept %#v\nthe line decodes to %#v", i, got, want)
	}
}

// FuzzDecodedCopy holds decodedCopy to the round trip for random cells
// made of the fuzzer's strings.
func FuzzDecodedCopy(f *testing.F) {
	f.Add(uint64(1), "notes", "<b>&amp;</b>")
	f.Add(uint64(2), "", "\u2028\"\\")
	f.Add(uint64(3), "\xff", "é")
	f.Fuzz(func(t *testing.T, seed uint64, a, b string) {
		r := rand.New(rand.NewPCG(seed, 18))
		pieces := []string{a, b, "", "x"}
		str := func() string { return pieces[r.IntN(len(pieces))] + pieces[r.IntN(len(pieces))] }
		checkDecodedCopy(t, "random", randomResult(r, str))
		_, live := liveCell(str)
		checkDecodedCopy(t, "live", live)
	})
}

// BenchmarkKeepResult compares keeping a live cell's result by decoding
// its line with copying it.
func BenchmarkKeepResult(b *testing.B) {
	_, res := liveCell(func() string { return "notes about <b>naïve</b> & \"quoted\" things" })
	line, err := encodeJSON(res, false)
	require.NoError(b, err)
	b.Run("unmarshal", func(b *testing.B) {
		for b.Loop() {
			var out CellResult
			if err := json.Unmarshal(line, &out); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("copy", func(b *testing.B) {
		for b.Loop() {
			var out CellResult
			if !decodedCopy(res, &out) {
				b.Fatal("declined")
			}
		}
	})
}

// BenchmarkScrubCell is what record pays to scrub a clean live cell: its
// result and its detail, with a run's configured secrets.
func BenchmarkScrubCell(b *testing.B) {
	s := scrub.New("configured-secret-1", "another-secret-value")
	d, res := liveCell(func() string { return "notes about <b>naïve</b> & \"quoted\" things" })
	for b.Loop() {
		s.Value(res)
		s.Value(d)
	}
}

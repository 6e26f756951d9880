package evals

import (
	"slices"
	"unicode/utf8"

	"github.com/dageval/dageval/harness/middleware"
)

// decodedCopy sets *out to what json.Unmarshal of r's encoding into a
// zero CellResult gives, without encoding or decoding: a worker keeps its
// cell's result so (see outDir.cellDecoded), and decoding the line it had
// just written was a third of writing the cell. The copy shares nothing
// mutable with r, as a decoded value does not. It reports false, leaving
// out unspecified, when r holds what a JSON round trip would change in a
// way the copy does not follow: a string that is not valid UTF-8, which
// encoding/json writes with U+FFFD for each bad byte. What else a round
// trip changes it follows: an empty slice or a nil pointer under
// omitempty is left out, so decodes as nil; other empty slices decode
// empty and nil ones nil; a check verdict's Informational survives its
// own encoding; numbers and valid strings come back as they were (a NaN
// or infinite score cannot be encoded, so never gets here).
//
// TestDecodedCopyIsTheRoundTrip holds it to json.Unmarshal and fails
// when CellResult or a type in it gains a field, to be handled here.
func decodedCopy(r *CellResult, out *CellResult) bool {
	if !validStrings(r.Case, r.Model, r.Profile, r.ID, string(r.Status), r.Error, string(r.Cause), r.Alias) ||
		!validStrings(r.Tags...) || !validStrings(r.ToolCalls...) || !validStrings(r.Warnings...) {
		return false
	}
	for i := range r.Checks {
		if !validStrings(r.Checks[i].Name, r.Checks[i].Detail) {
			return false
		}
	}
	for i := range r.RateLimits {
		if !utf8.ValidString(r.RateLimits[i].Provider) {
			return false
		}
	}
	*out = *r
	if r.Rubric != nil {
		ro := *r.Rubric
		if !validStrings(ro.Result, ro.Explanation) || !validCriteria(ro.Criteria) {
			return false
		}
		ro.Criteria = slices.Clone(ro.Criteria)
		out.Rubric = &ro
	}
	if r.Latency != nil {
		l := *r.Latency
		out.Latency = &l
	}
	out.Tags = cloneOmitEmpty(r.Tags)
	out.Checks = slices.Clone(r.Checks)
	out.ToolCalls = slices.Clone(r.ToolCalls)
	out.Warnings = cloneOmitEmpty(r.Warnings)
	out.RateLimits = cloneOmitEmpty(r.RateLimits)
	return true
}

// cloneOmitEmpty is what decoding gives back of a slice encoded under
// omitempty: nil when it was empty, else a copy.
func cloneOmitEmpty[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return slices.Clone(s)
}

func validStrings(ss ...string) bool {
	for _, s := range ss {
		if !utf8.ValidString(s) {
			return false
		}
	}
	return true
}

func validCriteria(cs []middleware.CriterionVerdict) bool {
	for i := range cs {
		if !validStrings(cs[i].Name, cs[i].Gap) {
			return false
		}
	}
	return true
}

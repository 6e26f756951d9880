package scrub

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// TestCandidatesFindWhatHasPrefixFinds holds the one-pass scan to the
// per-pattern search it replaced: every prefix at the start, the middle
// and the end of a text, cut short, doubled, next to others, and random
// texts made of the prefixes' pieces.
func TestCandidatesFindWhatHasPrefixFinds(t *testing.T) {
	want := func(text string) uint64 {
		var m uint64
		for k, p := range patterns() {
			if hasPrefix(text, p.prefixes) {
				m |= 1 << k
			}
		}
		return m
	}
	var all []string
	for _, p := range patterns() {
		all = append(all, p.prefixes...)
	}
	texts := []string{"", "x", "plain text with no key in it at all", strings.Repeat("s", 100)}
	for _, pre := range all {
		texts = append(texts, pre, "a "+pre+" b", "end "+pre, pre[:len(pre)-1], pre+pre, pre[:1]+pre)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		var b strings.Builder
		for range rng.IntN(8) {
			pre := all[rng.IntN(len(all))]
			b.WriteString(pre[:rng.IntN(len(pre)+1)])
			if rng.IntN(2) == 0 {
				b.WriteString(" ")
			}
		}
		texts = append(texts, b.String())
	}
	for _, text := range texts {
		if got, w := candidates(text), want(text); got != w {
			t.Fatalf("candidates(%q) = %b, hasPrefix finds %b", text, got, w)
		}
		if got, w := candidates([]byte(text)), want(text); got != w {
			t.Fatalf("candidates([]byte(%q)) = %b, hasPrefix finds %b", text, got, w)
		}
	}
}

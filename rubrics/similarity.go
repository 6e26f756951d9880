package rubrics

import (
	"math"
	"strings"
	"unicode"
)

// ROUGE and BLEU are written here rather than imported: the Go module proxy
// serves no maintained Go implementation of either (the NLP packages there
// are tokenizers and model runtimes), and both are a few lines of n-gram
// counting, which the tests pin against hand-computed values.

// words splits a text into lower-case words: runs of letters and digits.
func words(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
}

// ngrams counts the n-grams of a word list.
func ngrams(ws []string, n int) map[string]int {
	out := map[string]int{}
	for i := 0; i+n <= len(ws); i++ {
		out[strings.Join(ws[i:i+n], "\x00")]++
	}
	return out
}

// overlap counts the n-grams of cand also in ref, each clipped to its count in ref.
func overlap(cand, ref map[string]int) int {
	n := 0
	for g, c := range cand {
		n += min(c, ref[g])
	}
	return n
}

func total(m map[string]int) int {
	n := 0
	for _, c := range m {
		n += c
	}
	return n
}

// RougeN is the ROUGE-N recall of candidate against reference: the share of
// the reference's n-grams (with multiplicity) that the candidate has. It
// is 1 for an empty reference and 0 for an empty candidate otherwise.
func RougeN(candidate, reference string, n int) float64 {
	ref := ngrams(words(reference), n)
	want := total(ref)
	if want == 0 {
		return 1
	}
	return float64(overlap(ngrams(words(candidate), n), ref)) / float64(want)
}

// BLEU is the sentence-level BLEU-4 score of candidate against one
// reference: the geometric mean of the clipped 1- to 4-gram precisions
// (uniform weights) times the brevity penalty. A precision with no match
// counts 0.1 matches instead (Chen and Cherry's smoothing 1), so a short
// answer missing every 4-gram still scores by its shorter n-grams; an empty
// candidate scores 0.
func BLEU(candidate, reference string) float64 {
	c, r := words(candidate), words(reference)
	if len(c) == 0 {
		if len(r) == 0 {
			return 1
		}
		return 0
	}
	logSum := 0.0
	for n := 1; n <= 4; n++ {
		cand := ngrams(c, n)
		count := total(cand)
		if count == 0 {
			// The candidate is shorter than n words: smooth as no match.
			count = 1
		}
		match := float64(overlap(cand, ngrams(r, n)))
		if match == 0 {
			match = 0.1
		}
		logSum += math.Log(match/float64(count)) / 4
	}
	bp := 1.0
	if len(c) < len(r) {
		bp = math.Exp(1 - float64(len(r))/float64(len(c)))
	}
	return bp * math.Exp(logSum)
}

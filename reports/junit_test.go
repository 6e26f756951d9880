package reports_test

import (
	"encoding/xml"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/reports"
)

// A run that passed by its thresholds is green in a test reporter: its
// failing cells are skipped, each with why it failed and why the run
// passed anyway.
func TestJUnitRunPassedByThreshold(t *testing.T) {
	out := render(t, runQuickstart(t), reports.FormatJUnit)
	var doc struct {
		Failures int `xml:"failures,attr"`
		Errors   int `xml:"errors,attr"`
		Skipped  int `xml:"skipped,attr"`
		Suites   []struct {
			Cases []struct {
				Name    string `xml:"name,attr"`
				Skipped *struct {
					Message string `xml:"message,attr"`
					Text    string `xml:",chardata"`
				} `xml:"skipped"`
				Props []struct {
					Name  string `xml:"name,attr"`
					Value string `xml:"value,attr"`
				} `xml:"properties>property"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	require.NoError(t, xml.Unmarshal([]byte(out), &doc))
	assert.Equal(t, 0, doc.Failures+doc.Errors, "the run passed: nothing red")
	assert.Equal(t, 2, doc.Skipped, "the quickstart's two failing cells")
	var skipped int
	for _, s := range doc.Suites {
		for _, c := range s.Cases {
			if c.Skipped == nil {
				continue
			}
			skipped++
			assert.Equal(t, "packing-list [epoch 1]", c.Name)
			assert.Equal(t, "failed within the suite's thresholds (the run passed): 1 check failed", c.Skipped.Message)
			assert.Contains(t, c.Skipped.Text, `does not contain "umbrella"`)
			assert.Contains(t, c.Props, struct {
				Name  string `xml:"name,attr"`
				Value string `xml:"value,attr"`
			}{"status", "fail"})
		}
	}
	assert.Equal(t, 2, skipped)
	assert.Contains(t, out, "2 cells did not pass, but the run did, so they are reported as skipped")
}

// Class names split at their dots into dageval, model and profile, whatever
// the model is called; times are summed up from the cells that have them.
func TestJUnitClassNamesAndTimes(t *testing.T) {
	r := loadFixture(t)
	for i := range r.Results {
		if r.Results[i].Model == "openai:gpt-5" {
			r.Results[i].Model = "openai:gpt-4.1"
		}
	}
	for i := range r.Summary.Groups {
		if r.Summary.Groups[i].Model == "openai:gpt-5" {
			r.Summary.Groups[i].Model = "openai:gpt-4.1"
		}
	}
	for i := range r.Summary.Missing {
		r.Summary.Missing[i].Model = "openai:gpt-4.1"
	}
	out := render(t, r, reports.FormatJUnit)
	classes := map[string]bool{}
	for _, m := range regexp.MustCompile(`classname="([^"]*)"`).FindAllStringSubmatch(out, -1) {
		classes[m[1]] = true
	}
	assert.Equal(t, map[string]bool{
		"dageval.verdict": true,
		"dageval.anthropic_claude-sonnet-4-6.baseline": true, "dageval.anthropic_claude-sonnet-4-6.terse": true,
		"dageval.openai_gpt-4_1.baseline": true, "dageval.openai_gpt-4_1.terse": true,
	}, classes)
	for c := range classes {
		assert.Len(t, strings.Split(c, "."), map[bool]int{true: 2, false: 3}[c == "dageval.verdict"], c)
	}
	// Only the gpt cells have recorded latency; their suites and the
	// document carry the sums, the others no time at all.
	assert.Regexp(t, `<testsuites [^>]* time="63.390">`, out)
	assert.Regexp(t, `<testsuite name="openai:gpt-4.1 × baseline" [^>]* time="31.800">`, out)
	assert.Regexp(t, `<testsuite name="anthropic:claude-sonnet-4-6 × baseline" [^>]*skipped="0">`, out)
}

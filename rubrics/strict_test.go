package rubrics_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/rubrics"
)

// A weight is a finite number, and the messages say so in the rubric's
// words: 1e308 was "want a number, got a string", .nan "want a number, got
// a number".
func TestRubricWeightsAreFiniteNumbers(t *testing.T) {
	head := "name: r\npolicy: weighted\nthreshold: 0.5\ncriteria:\n  - {name: a, description: b, weight: "
	tests := []struct{ weight, want string }{
		{".nan", "r.yaml:5:39: criteria[0].weight: want a finite number, got .nan"},
		{".inf", "r.yaml:5:39: criteria[0].weight: want a finite number, got .inf"},
		{"-.inf", "r.yaml:5:39: criteria[0].weight: want a finite number, got -.inf"},
		{"1e999", "r.yaml:5:39: criteria[0].weight: want a finite number, got 1e999 (out of range)"},
		{"'2'", "r.yaml:5:39: criteria[0].weight: want a number, got a string"},
	}
	for _, tt := range tests {
		t.Run(tt.weight, func(t *testing.T) {
			_, err := rubrics.ParseRubric("r.yaml", []byte(head+tt.weight+"}\n"))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
	r, err := rubrics.ParseRubric("r.yaml", []byte(head+"1e308}\n"))
	require.NoError(t, err, "1e308 is a finite number")
	assert.Equal(t, 1e308, r.Criteria[0].Weight)
}

package reports

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Reference values: R's pbinom, binom.test and p.adjust, qnorm, and the
// published McNemar sample-size formula.
func TestBinomCDF(t *testing.T) {
	tests := []struct {
		k, n int
		p    float64
		want float64
	}{
		{2, 10, 0.5, 56.0 / 1024},   // exact: (1+10+45)/2^10
		{3, 20, 0.3, 0.10708680450}, // pbinom(3, 20, 0.3)
		{0, 5, 0.5, 1.0 / 32},
		{5, 5, 0.5, 1},
		{-1, 5, 0.5, 0},
		{40, 100, 0.5, 0.02844396682},            // pbinom(40, 100, 0.5)
		{10, 1000, 0.05, 2.7977985614856666e-12}, // deep tail: exact rational sum
	}
	for _, tc := range tests {
		got := binomCDF(tc.k, tc.n, tc.p)
		if tc.want == 0 {
			assert.Zero(t, got)
			continue
		}
		assert.InEpsilon(t, tc.want, got, 1e-9, "pbinom(%d, %d, %v)", tc.k, tc.n, tc.p)
	}
}

func TestMcNemarExact(t *testing.T) {
	tests := []struct {
		b, c int
		want float64
	}{
		{10, 2, 158.0 / 4096}, // binom.test(2, 12)$p.value = 0.03857422
		{6, 0, 2.0 / 64},      // 0.03125: six one-way flips are just significant at 0.05
		{5, 0, 2.0 / 32},      // 0.0625: five are not
		{5, 5, 1},
		{0, 0, 1},
		{25, 10, 0.01667384780012071}, // binom.test(10, 35)$p.value
	}
	for _, tc := range tests {
		assert.InDelta(t, tc.want, mcnemarExact(tc.b, tc.c), 1e-7, "b=%d c=%d", tc.b, tc.c)
		assert.InDelta(t, mcnemarExact(tc.b, tc.c), mcnemarExact(tc.c, tc.b), 1e-15, "symmetric")
	}
	assert.Equal(t, 6, minDiscordant(0.05))
	assert.Equal(t, 8, minDiscordant(0.01)) // 2/2^8 = 0.0078
}

func TestHolm(t *testing.T) {
	got := holm([]float64{0.01, 0.04, 0.03, 0.005})
	// p.adjust(c(0.01, 0.04, 0.03, 0.005), "holm")
	want := []float64{0.03, 0.06, 0.06, 0.02}
	for i := range want {
		assert.InDelta(t, want[i], got[i], 1e-12)
	}
	assert.Equal(t, []float64{1}, holm([]float64{1}))
}

func TestNormalQuantile(t *testing.T) {
	assert.InDelta(t, 1.959963984540054, normalQuantile(0.975), 1e-12)
	assert.InDelta(t, 0.8416212335729143, normalQuantile(0.8), 1e-12)
	assert.InDelta(t, 0, normalQuantile(0.5), 1e-15)
	assert.InDelta(t, -2.3263478740408408, normalQuantile(0.01), 1e-12)
}

func TestPairedBinaryMDE(t *testing.T) {
	// Connor (1987): ψ = 0.2, δ = 0.1, α = 0.05, power 0.8 needs
	// (1.95996·√0.2 + 0.84162·√0.19)² / 0.01 = 154.6 pairs.
	n := (1.959963984540054*math.Sqrt(0.2) + 0.8416212335729143*math.Sqrt(0.19)) / 0.1
	n *= n
	assert.InDelta(t, 154.6, n, 0.05)
	assert.InDelta(t, 0.1, pairedBinaryMDE(155, 0.2, 0.05, 0.8), 0.0005)
	assert.Equal(t, 155, pairsNeeded(0.1, 0.2, 0.05, 0.8, 1_000_000))
	// More pairs detect smaller effects.
	assert.Less(t, pairedBinaryMDE(600, 0.2, 0.05, 0.8), pairedBinaryMDE(150, 0.2, 0.05, 0.8))
	// With no discordance the exact floor applies: 6 one-way flips of 60.
	assert.InDelta(t, 0.1, pairedBinaryMDE(60, 0, 0.05, 0.8), 1e-12)
	assert.Equal(t, -1, pairsNeeded(0.0001, 0.5, 0.05, 0.8, 1000))
}

func TestClusterBootstrapSeeded(t *testing.T) {
	cs := []cluster{
		{pass: []float64{0, 0, -1}, score: []float64{0, 0, -0.5}},
		{pass: []float64{-1, -1, -1}, score: []float64{-1, -1, -1}},
		{pass: []float64{0, 1, 0}, score: []float64{0, 0.5, 0}},
		{pass: []float64{0, 0, 0}, score: []float64{0.1, 0, -0.1}},
	}
	p1, s1 := clusterBootstrap(cs, 0.05, 2000, 7, 0)
	p2, s2 := clusterBootstrap(cs, 0.05, 2000, 7, 0)
	assert.Equal(t, p1, p2)
	assert.Equal(t, s1, s2)
	var many []cluster
	for i := range 30 {
		many = append(many, cluster{pass: []float64{0, 0}, score: []float64{0.3 * math.Sin(float64(i)), 0.2 * math.Cos(float64(3*i))}})
	}
	_, a := clusterBootstrap(many, 0.05, 2000, 7, 0)
	_, b := clusterBootstrap(many, 0.05, 2000, 8, 0)
	_, c := clusterBootstrap(many, 0.05, 2000, 7, 1)
	assert.NotEqual(t, a, b, "another seed resamples differently")
	assert.NotEqual(t, a, c, "another stream resamples differently")
	// The observed mean (−3/12) lies inside its interval.
	assert.LessOrEqual(t, p1[0], -0.25)
	assert.GreaterOrEqual(t, p1[1], -0.25)
	assert.Less(t, p1[0], p1[1])
	// Identical runs give a degenerate interval at zero.
	z := []cluster{{pass: []float64{0, 0}, score: []float64{0, 0}}}
	p, s := clusterBootstrap(z, 0.05, 100, 1, 0)
	assert.Equal(t, [2]float64{0, 0}, p)
	assert.Equal(t, [2]float64{0, 0}, s)
}

func TestQuantile(t *testing.T) {
	xs := []float64{1, 2, 3, 4, 5}
	assert.Equal(t, 3.0, quantile(xs, 0.5))
	assert.Equal(t, 1.0, quantile(xs, 0))
	assert.Equal(t, 5.0, quantile(xs, 1))
	assert.InDelta(t, 1.1, quantile(xs, 0.025), 1e-12) // R quantile(1:5, 0.025), type 7
}

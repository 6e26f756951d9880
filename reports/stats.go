package reports

import (
	"math"
	"math/rand/v2"
	"slices"
)

// The statistics compare needs, written out so that every number can be
// checked against a textbook value (see stats_test.go): exact binomial tails
// through log-gamma, McNemar's exact test, Holm's step-down adjustment, a
// seeded cluster bootstrap and the minimum detectable effect of a paired
// binary comparison.

// logChoose is log(n choose k).
func logChoose(n, k int) float64 {
	a, _ := math.Lgamma(float64(n + 1))
	b, _ := math.Lgamma(float64(k + 1))
	c, _ := math.Lgamma(float64(n - k + 1))
	return a - b - c
}

// binomCDF is P(X ≤ k) for X ~ Binomial(n, p), summed in log space so large
// n neither overflows nor loses the small tail.
func binomCDF(k, n int, p float64) float64 {
	switch {
	case k < 0:
		return 0
	case k >= n:
		return 1
	case p <= 0:
		return 1
	case p >= 1:
		return 0
	}
	lp, lq := math.Log(p), math.Log1p(-p)
	terms := make([]float64, 0, k+1)
	maxT := math.Inf(-1)
	for i := 0; i <= k; i++ {
		t := logChoose(n, i) + float64(i)*lp + float64(n-i)*lq
		terms = append(terms, t)
		maxT = math.Max(maxT, t)
	}
	sum := 0.0
	for _, t := range terms {
		sum += math.Exp(t - maxT)
	}
	return math.Min(1, math.Exp(maxT+math.Log(sum)))
}

// signTestP is the exact two-sided p-value of a sign test with `down` and
// `up` outcomes (ties dropped): 2·P(X ≤ min(down, up)) for X ~ Bin(n, ½),
// capped at 1. McNemar's exact test is this test on the discordant pairs.
func signTestP(down, up int) float64 {
	n := down + up
	if n == 0 {
		return 1
	}
	return math.Min(1, 2*binomCDF(min(down, up), n, 0.5))
}

// mcnemarExact is McNemar's exact test on b pairs that went pass → fail and
// c pairs that went fail → pass.
func mcnemarExact(b, c int) float64 { return signTestP(b, c) }

// holm adjusts p-values for multiple tests with Holm's step-down method,
// which keeps the chance of any false alarm at alpha without assuming the
// tests are independent.
func holm(ps []float64) []float64 {
	m := len(ps)
	idx := make([]int, m)
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		switch {
		case ps[a] < ps[b]:
			return -1
		case ps[a] > ps[b]:
			return 1
		}
		return 0
	})
	out := make([]float64, m)
	running := 0.0
	for rank, i := range idx {
		adj := math.Min(1, float64(m-rank)*ps[i])
		running = math.Max(running, adj)
		out[i] = running
	}
	return out
}

// normalQuantile is the inverse of the standard normal CDF.
func normalQuantile(p float64) float64 { return math.Sqrt2 * math.Erfinv(2*p-1) }

// minDiscordant is the fewest discordant pairs, all in one direction, that
// McNemar's exact test can call significant at alpha: no sample with fewer
// can reject, however large the sample.
func minDiscordant(alpha float64) int {
	k := 1
	for signTestP(k, 0) >= alpha {
		k++
		if k > 1000 {
			break
		}
	}
	return k
}

// pairedBinaryMDE is the smallest difference in pass rate (head − base, in
// either direction) that n pairs detect with the given power by a two-sided
// test at alpha, when a fraction psi of pairs are discordant (Connor 1987:
// n = (z₁₋α/₂·√ψ + z_power·√(ψ−δ²))² / δ²). It never goes below the exact
// test's floor minDiscordant(alpha)/n.
func pairedBinaryMDE(n int, psi, alpha, power float64) float64 {
	return pairedBinaryMDEFloor(n, psi, alpha, power, minDiscordant(alpha))
}

// pairedBinaryMDEFloor is pairedBinaryMDE with minDiscordant(alpha) given,
// for callers that evaluate many sample sizes at one alpha.
func pairedBinaryMDEFloor(n int, psi, alpha, power float64, kmin int) float64 {
	if n <= 0 {
		return 1
	}
	floor := math.Min(1, float64(kmin)/float64(n))
	if psi <= 0 {
		return floor
	}
	za, zb := normalQuantile(1-alpha/2), normalQuantile(power)
	f := func(d float64) float64 {
		return math.Sqrt(float64(n))*d - za*math.Sqrt(psi) - zb*math.Sqrt(math.Max(0, psi-d*d))
	}
	lo, hi := 0.0, 1.0
	if f(hi) < 0 {
		return 1
	}
	for range 100 {
		mid := (lo + hi) / 2
		if f(mid) < 0 {
			lo = mid
		} else {
			hi = mid
		}
	}
	return math.Min(1, math.Max(hi, floor))
}

// pairsNeeded is the smallest number of pairs whose MDE is at most delta,
// or -1 when more than limit would be needed.
func pairsNeeded(delta, psi, alpha, power float64, limit int) int {
	if delta <= 0 {
		return -1
	}
	kmin := minDiscordant(alpha)
	if pairedBinaryMDEFloor(limit, psi, alpha, power, kmin) > delta {
		return -1
	}
	lo, hi := 1, limit
	for lo < hi {
		mid := (lo + hi) / 2
		if pairedBinaryMDEFloor(mid, psi, alpha, power, kmin) <= delta {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// meanDiffMDE is the detectable difference of a paired mean with standard
// deviation sd of the differences (normal approximation).
func meanDiffMDE(n int, sd, alpha, power float64) float64 {
	if n <= 1 {
		return math.Inf(1)
	}
	return (normalQuantile(1-alpha/2) + normalQuantile(power)) * sd / math.Sqrt(float64(n))
}

// cluster holds the paired differences of one case (all its epochs), the
// unit the bootstrap resamples: epochs of a case are not independent.
type cluster struct {
	pass  []float64 // head − base pass (−1, 0, +1) per pair
	score []float64 // head − base score per pair
}

// clusterBootstrap returns percentile confidence intervals at level 1−alpha
// for the mean pass and score differences, resampling clusters with
// replacement `resamples` times from a generator seeded with seed and
// stream, so the same inputs always give the same intervals.
func clusterBootstrap(cs []cluster, alpha float64, resamples int, seed, stream uint64) (passCI, scoreCI [2]float64) {
	if len(cs) == 0 || resamples <= 0 {
		return
	}
	rng := rand.New(rand.NewPCG(seed, stream))
	type sums struct{ pass, score float64 }
	tot := make([]sums, len(cs))
	cnt := make([]int, len(cs))
	for i, c := range cs {
		for j := range c.pass {
			tot[i].pass += c.pass[j]
			tot[i].score += c.score[j]
		}
		cnt[i] = len(c.pass)
	}
	pm := make([]float64, resamples)
	sm := make([]float64, resamples)
	for r := range resamples {
		var p, s float64
		n := 0
		for range cs {
			i := rng.IntN(len(cs))
			p += tot[i].pass
			s += tot[i].score
			n += cnt[i]
		}
		if n > 0 {
			pm[r], sm[r] = p/float64(n), s/float64(n)
		}
	}
	slices.Sort(pm)
	slices.Sort(sm)
	passCI = [2]float64{quantile(pm, alpha/2), quantile(pm, 1-alpha/2)}
	scoreCI = [2]float64{quantile(sm, alpha/2), quantile(sm, 1-alpha/2)}
	return
}

// quantile is the linear-interpolation (type 7) quantile of sorted xs.
func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	h := q * float64(len(sorted)-1)
	lo := math.Floor(h)
	i := int(lo)
	if i+1 >= len(sorted) {
		return sorted[len(sorted)-1]
	}
	return sorted[i] + (h-lo)*(sorted[i+1]-sorted[i])
}

// sampleSD is the sample standard deviation.
func sampleSD(xs []float64) float64 {
	if len(xs) < 2 {
		return 0
	}
	m := 0.0
	for _, x := range xs {
		m += x
	}
	m /= float64(len(xs))
	v := 0.0
	for _, x := range xs {
		v += (x - m) * (x - m)
	}
	return math.Sqrt(v / float64(len(xs)-1))
}

package bench

import (
	"math"
	"slices"
)

// median of xs; the mean of the middle two for an even count; NaN for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// spread is (max - min) / median: how far apart the rounds were, as a
// fraction of the figure reported. 0 for one round; NaN for none.
func spread(xs []float64) float64 {
	m := median(xs)
	if len(xs) == 0 || m == 0 {
		return math.NaN()
	}
	return (slices.Max(xs) - slices.Min(xs)) / m
}

// geomean is the geometric mean of the positive, finite xs (others are
// skipped: an operation one side could not run has no ratio), NaN if none.
func geomean(xs []float64) float64 {
	var sum float64
	n := 0
	for _, x := range xs {
		if x > 0 && !math.IsInf(x, 0) && !math.IsNaN(x) {
			sum += math.Log(x)
			n++
		}
	}
	if n == 0 {
		return math.NaN()
	}
	return math.Exp(sum / float64(n))
}

// ratio is a / b, NaN when either is unknown or b is zero.
func ratio(a, b float64) float64 {
	if math.IsNaN(a) || math.IsNaN(b) || b == 0 {
		return math.NaN()
	}
	return a / b
}

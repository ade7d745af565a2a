package alloc

import (
	"iter"
	"math"
	"math/bits"
)

// scoreWeight[k] is w_k, the per-byte weight of an extent of about 2^k
// bytes in Ceph's fragmentation score: it grows by 1.2 per doubling up to
// 1 MiB, by a factor sliding from 1.2 to 1 up to 128 MiB, and stays flat
// after that.
var scoreWeight = func() (w [65]float64) {
	w[0] = 1
	for k := 1; k < len(w); k++ {
		s := 1.0
		switch {
		case k <= 20:
			s = 1.2
		case k <= 26:
			s = (float64(k-20) + float64(27-k)*1.2) / 7
		}
		w[k] = w[k-1] * s
	}
	return w
}()

// value is V(v), the worth of one free extent of v bytes: large extents are
// worth more per byte than small ones, interpolated linearly between powers
// of two.
func value(v uint64) float64 {
	if v == 0 {
		return 0
	}
	k := bits.Len64(v) - 1
	p := math.Ldexp(1, k)
	x := (float64(v) - p) / p
	if k == 63 {
		return p * scoreWeight[k]
	}
	return p*scoreWeight[k]*(1-x) + 2*p*scoreWeight[k+1]*x
}

// FragmentationScore returns Ceph's fragmentation score of free extents
// whose lengths, in blocks, lens yields, for blocks of unit bytes: 0 when
// free space is one extent, 1 when every free extent is one block.
func FragmentationScore(lens iter.Seq[uint64], unit uint64) float64 {
	var total uint64
	sum := 0.0
	for l := range lens {
		total += l
		sum += value(l * unit)
	}
	if total <= 1 {
		return 0
	}
	whole := value(total * unit)
	return (whole - sum) / (whole - float64(total)*value(unit))
}

package fuse

import (
	"math"
	"math/bits"
	"sync/atomic"
	"time"
)

// Per-opcode latency: how long the adapter took to serve each request,
// from the start of its method to the reply handed back to go-fuse (the
// volume's work included; go-fuse's decoding, the write of the reply and
// a spliced READ's copy excluded). Every request adds its time to the
// accounting counter "ns-NAME" (so a snapshot gives the mean with
// "op-NAME") and one to its bucket of a log2 histogram kept here.

// LatencyBuckets is the length of OpLatency.Buckets. Bucket 0 counts
// requests served in under 1 µs (1024 ns), bucket i > 0 those that took
// [2^(i+9), 2^(i+10)) ns, so bucket 10 is about 1-2 ms; the last bucket
// also counts everything slower (over about 9 minutes).
const LatencyBuckets = 30

// OpLatency is the latency figure of one opcode.
type OpLatency struct {
	Op      string // the kernel's name: "LOOKUP", "WRITE", ...
	Count   uint64 // requests served: the sum of Buckets
	Total   time.Duration
	Buckets [LatencyBuckets]uint64
}

// BucketBound is the exclusive upper bound of Buckets[i]; the last
// bucket has none and reports the largest Duration.
func BucketBound(i int) time.Duration {
	if i >= LatencyBuckets-1 {
		return time.Duration(1<<63 - 1)
	}
	return time.Duration(1) << (i + 10)
}

// bucketOf returns the bucket of a request that took d.
func bucketOf(d time.Duration) int {
	if d < 1024 {
		return 0
	}
	return min(bits.Len64(uint64(d))-10, LatencyBuckets-1)
}

// Mean is Total / Count, or 0 when nothing was served.
func (l OpLatency) Mean() time.Duration {
	if l.Count == 0 {
		return 0
	}
	return l.Total / time.Duration(l.Count)
}

// Quantile returns the upper bound of the bucket holding the q-quantile
// (0 < q <= 1) of the requests: the latency at most a fraction q of them
// exceeded the bucket below, to within a factor of two. It is 0 when
// nothing was served.
func (l OpLatency) Quantile(q float64) time.Duration {
	if l.Count == 0 {
		return 0
	}
	rank := max(uint64(math.Ceil(q*float64(l.Count))), 1)
	var seen uint64
	for i, n := range l.Buckets {
		seen += n
		if seen >= rank {
			return BucketBound(i)
		}
	}
	return BucketBound(LatencyBuckets - 1)
}

// histogram is one opcode's buckets. They are plain atomics, not striped:
// a request costs one add to one of 30 words, next to a round trip of
// tens of microseconds, and a snapshot sums nothing.
type histogram [LatencyBuckets]atomic.Uint64

func (h *histogram) add(d time.Duration) { h[bucketOf(d)].Add(1) }

// Latencies returns the latency figures of every opcode served so far
// since the mount, in a fixed order. It may run at any time; each figure
// is read without stopping the requests, so one served meanwhile may be
// in Total but not yet in Buckets.
func (s *Server) Latencies() []OpLatency { return s.fs.stats.latencies() }

package fuse

import (
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
)

func TestLatencyBuckets(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want int
	}{
		{0, 0}, {1023, 0}, {1024, 1}, {2047, 1}, {2048, 2},
		{time.Millisecond, 10}, {time.Duration(1<<38 - 1), 28}, {time.Duration(1 << 38), 29}, {time.Hour, 29},
	} {
		b := bucketOf(c.d)
		if b != c.want {
			t.Errorf("bucketOf(%v) = %d, want %d", c.d, b, c.want)
		}
		if c.d >= BucketBound(b) || (b > 0 && c.d < BucketBound(b-1)) {
			t.Errorf("%v is outside bucket %d: [%v, %v)", c.d, b, BucketBound(b-1), BucketBound(b))
		}
	}
}

func TestLatencyQuantile(t *testing.T) {
	var l OpLatency
	if l.Quantile(0.5) != 0 || l.Mean() != 0 {
		t.Errorf("empty: quantile %v, mean %v", l.Quantile(0.5), l.Mean())
	}
	l.Buckets[3], l.Buckets[5], l.Buckets[20] = 90, 9, 1 // 90 under 8 µs, 9 under 32 µs, 1 slow
	l.Count, l.Total = 100, 100*time.Millisecond
	for _, c := range []struct {
		q    float64
		want time.Duration
	}{{0.01, BucketBound(3)}, {0.5, BucketBound(3)}, {0.9, BucketBound(3)}, {0.91, BucketBound(5)}, {0.99, BucketBound(5)}, {1, BucketBound(20)}} {
		if got := l.Quantile(c.q); got != c.want {
			t.Errorf("Quantile(%v) = %v, want %v", c.q, got, c.want)
		}
	}
	if l.Mean() != time.Millisecond {
		t.Errorf("mean %v, want 1ms", l.Mean())
	}
}

// TestLatencies: every request served lands in its opcode's histogram and
// total, failed ones included, and measuring allocates nothing (see
// TestAllocations).
func TestLatencies(t *testing.T) {
	fs := newTestFS(t)
	f := fs.mkfile(t, 1, "f")
	get := fuse.GetAttrIn{InHeader: header(f.NodeId)}
	var out fuse.AttrOut
	for range 10 {
		fs.GetAttr(nil, &get, &out)
	}
	get.NodeId = 999 // no such inode
	fs.GetAttr(nil, &get, &out)
	lat := map[string]OpLatency{}
	for _, l := range fs.stats.latencies() {
		lat[l.Op] = l
	}
	g := lat["GETATTR"]
	if g.Count != 11 || g.Total <= 0 || g.Quantile(1) < g.Mean() {
		t.Errorf("GETATTR latency %+v, want 11 requests with a positive total", g)
	}
	if c := lat["MKNOD"].Count; c != 1 {
		t.Errorf("MKNOD latency count %d, want 1", c)
	}
	if _, ok := lat["WRITE"]; ok {
		t.Errorf("WRITE listed without a request")
	}
	ns, _ := fs.reg.Snapshot().Layer(Layer)
	if c, _ := ns.Counter("ns-GETATTR"); c.Value != uint64(g.Total) {
		t.Errorf("counter ns-GETATTR %d, want the total %d", c.Value, g.Total)
	}
}

// BenchmarkRequestAccounting is what the counters and the latency
// histogram add to every request, on all CPUs at once.
func BenchmarkRequestAccounting(b *testing.B) {
	fs := newTestFS(b)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			fs.stats.end(opGetAttr, fs.stats.begin(opGetAttr), served)
		}
	})
}

package iobuf

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/smallfs/smallfs/accounting"
	"github.com/smallfs/smallfs/internal/cputime"
)

var benchSizes = []int{4 << 10, 64 << 10, 128 << 10, 256 << 10, 1 << 20}

// BenchmarkGetPut measures one Get+Put of the pool against one make, serial
// and parallel. make's buffer is returned through a func value, so it is on
// the heap as on a real I/O path.
func BenchmarkGetPut(b *testing.B) {
	p, err := New(Options{Registry: accounting.NewRegistry()})
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range benchSizes {
		name := "size=" + className(classOf(n))
		serialAndParallel(b, name+"/pool", func() []byte {
			buf := p.Get(n)
			buf.B[0] = 1
			p.Put(buf)
			return nil
		})
		serialAndParallel(b, name+"/make", func() []byte {
			buf := make([]byte, n)
			buf[0] = 1
			return buf
		})
	}
}

func serialAndParallel(b *testing.B, name string, op func() []byte) {
	b.Run(name+"/serial", func(b *testing.B) {
		defer cputime.PerOp(b)()
		b.ReportAllocs()
		for b.Loop() {
			op()
		}
	})
	b.Run(name+"/parallel", func(b *testing.B) {
		defer cputime.PerOp(b)()
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				op()
			}
		})
	})
}

// BenchmarkChurn keeps a window of live buffers and replaces the oldest on
// every op, writing each new buffer in full as a read into it would, and
// reports the garbage collections per thousand ops: the cost the pools are
// meant to remove. Modes: pool on, pool off (Disabled: Get makes), and
// plain make. The window is filled before timing starts.
func BenchmarkChurn(b *testing.B) {
	const window = 64
	for _, n := range []int{4 << 10, 64 << 10, 1 << 20} {
		for _, mode := range []string{"pool", "off", "make"} {
			b.Run(fmt.Sprintf("size=%s/%s", className(classOf(n)), mode), func(b *testing.B) {
				p, err := New(Options{Disabled: mode == "off", Registry: accounting.NewRegistry()})
				if err != nil {
					b.Fatal(err)
				}
				bufs := make([]*Buf, window)
				raw := make([][]byte, window)
				replace := func(k int) []byte {
					if mode == "make" {
						raw[k] = make([]byte, n)
						return raw[k]
					}
					p.Put(bufs[k])
					bufs[k] = p.Get(n)
					return bufs[k].B
				}
				for k := range window {
					replace(k)
				}
				defer cputime.PerOp(b)()
				b.ReportAllocs()
				b.SetBytes(int64(n))
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				for i := 0; b.Loop(); i++ {
					copy(replace(i%window), payload[:n])
				}
				runtime.ReadMemStats(&after)
				b.ReportMetric(float64(after.NumGC-before.NumGC)*1000/float64(b.N), "gc/kop")
			})
		}
	}
}

var payload = make([]byte, 1<<20)

package volume

import (
	"flag"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/smallfs/smallfs/fs/device"
	"github.com/smallfs/smallfs/fs/format"
	"github.com/smallfs/smallfs/internal/cputime"
)

var (
	benchScale   = flag.Int("bench.scale", 1000000, "files of BenchmarkScale, 1,000 to a directory")
	benchProfile = flag.String("bench.profile", "", "BenchmarkScale: write a CPU profile of the Close, Open and Check it times to `FILE`")
	benchHeap    = flag.String("bench.heapprofile", "", "BenchmarkScale: write a heap profile once the files are made to `FILE`")
	benchKeep    = flag.String("bench.keep", "", "BenchmarkScale: keep the image, closed clean, at `PATH` (to time smallfs mount and fsck of it)")
)

// BenchmarkScale is `smallfs bench --scale` in process: -bench.scale
// files in directories of 1,000, every other one a 4 KiB file (a
// one-block extent and its block checksum, committed as a write-back
// would, without writing the data), the others empty. It reports heap
// bytes per file after the files are made and after a reopen (names
// included, after a collection), and the wall and CPU time of the
// checkpointing Close, of the Open that loads it, and of Check. Run with
// -benchtime=1x.
func BenchmarkScale(b *testing.B) {
	n := *benchScale
	const perDir = 1000
	for range b.N {
		before := heapAfterGC()
		v, dev, path := benchVolume(b, int64(n)*(4096/2+1024)+512<<20, Options{CommitInterval: -1})
		sum := format.Checksum(make([]byte, v.blockSize))
		for d := 0; d*perDir < n; d++ {
			dir := must[Attr](b)(v.Mkdir(root, RootIno, "d"+strconv.Itoa(d), 0o755))
			for i := range min(perDir, n-d*perDir) {
				a := must[Attr](b)(v.Mknod(root, dir.Ino, "f"+strconv.Itoa(i), 0o644, 0))
				if i%2 == 0 {
					continue
				}
				v.mu.Lock()
				var none uint64
				e, err := v.space.alloc(v.dataStart, 1, &none)
				if err == nil {
					rec := v.inodes.get(a.Ino).record(a.Ino)
					rec.Size = uint64(v.blockSize)
					_, err = v.commit(rec,
						format.ExtentsRec{Ino: uint64(a.Ino), Extents: []format.Extent{{Physical: e.Off, Len: 1}}},
						format.BlockSumsRec{Block: e.Off, Sums: []uint32{sum}})
				}
				v.mu.Unlock()
				ok(b, err)
			}
			if d%100 == 99 {
				ok(b, v.Sync())
			}
		}
		ok(b, v.Sync())
		made := heapAfterGC()
		if *benchHeap != "" {
			f, err := os.Create(*benchHeap)
			ok(b, err)
			ok(b, pprof.Lookup("heap").WriteTo(f, 0))
			ok(b, f.Close())
		}
		runtime.GC()
		stop := startProfile(b)
		cpu0, t0 := cputime.Process(), time.Now()
		ok(b, v.Close())
		closeWall, closeCPU := time.Since(t0), cputime.Process()-cpu0
		ok(b, dev.Close())
		v = nil
		runtime.GC()

		dev, err := device.Open(path, device.Options{})
		ok(b, err)
		cpu0, t0 = cputime.Process(), time.Now()
		v, err = Open(dev, Options{CommitInterval: -1})
		openWall, openCPU := time.Since(t0), cputime.Process()-cpu0
		ok(b, err)
		opened := heapAfterGC()
		cpu0, t0 = cputime.Process(), time.Now()
		if p := v.Check(); len(p) > 0 {
			b.Fatalf("check: %v", p)
		}
		checkWall, checkCPU := time.Since(t0), cputime.Process()-cpu0
		stop()
		ok(b, v.Close())
		ok(b, dev.Close())
		if *benchKeep != "" {
			ok(b, os.Rename(path, *benchKeep))
		}

		per := func(x uint64) float64 { return (float64(x) - float64(before)) / float64(n) }
		b.ReportMetric(per(made), "heap-B/file-made")
		b.ReportMetric(per(opened), "heap-B/file-opened")
		b.ReportMetric(closeWall.Seconds(), "s-close")
		b.ReportMetric(closeCPU.Seconds(), "cpu-s-close")
		b.ReportMetric(openWall.Seconds(), "s-open")
		b.ReportMetric(openCPU.Seconds(), "cpu-s-open")
		b.ReportMetric(checkWall.Seconds(), "s-check")
		b.ReportMetric(checkCPU.Seconds(), "cpu-s-check")
	}
}

// startProfile starts the CPU profile -bench.profile asks for and returns
// what stops it.
func startProfile(b *testing.B) (stop func()) {
	if *benchProfile == "" {
		return func() {}
	}
	f, err := os.Create(*benchProfile)
	ok(b, err)
	ok(b, pprof.StartCPUProfile(f))
	return func() {
		pprof.StopCPUProfile()
		ok(b, f.Close())
	}
}

var benchImage = flag.String("bench.image", "", "BenchmarkOpenImage: the image to open (it is opened read-write and closed again)")

// BenchmarkOpenImage opens the image -bench.image names (one that
// BenchmarkScale -bench.keep left, say) and reports the wall and CPU
// time of Open and the wall time from the start of each of its phases
// (Options.Progress) to the next. Run with -benchtime=1x.
func BenchmarkOpenImage(b *testing.B) {
	if *benchImage == "" {
		b.Skip("no -bench.image")
	}
	for range b.N {
		dev, err := device.Open(*benchImage, device.Options{})
		ok(b, err)
		runtime.GC()
		var phases []string
		var at []time.Time
		opts := Options{CommitInterval: -1, Progress: func(p Progress) {
			if len(phases) == 0 || phases[len(phases)-1] != p.Phase {
				phases, at = append(phases, p.Phase), append(at, time.Now())
			}
		}}
		cpu0, t0 := cputime.Process(), time.Now()
		v, err := Open(dev, opts)
		wall, cpu := time.Since(t0), cputime.Process()-cpu0
		ok(b, err)
		at = append(at, t0.Add(wall))
		for i, ph := range phases {
			b.ReportMetric(at[i+1].Sub(at[i]).Seconds(), "s-"+strings.ReplaceAll(ph, " ", "-"))
		}
		b.ReportMetric(wall.Seconds(), "s-open")
		b.ReportMetric(cpu.Seconds(), "cpu-s-open")
		ok(b, v.Discard())
		ok(b, dev.Close())
	}
}

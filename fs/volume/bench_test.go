package volume

import (
	"errors"
	"flag"
	"fmt"
	"github.com/smallfs/smallfs/fs/format"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/smallfs/smallfs/accounting"
	"github.com/smallfs/smallfs/fs/device"
	"github.com/smallfs/smallfs/internal/cputime"
)

var (
	benchFiles = flag.Int("bench.files", 100000, "files of the small-file benchmark")
	benchEmpty = flag.Int("bench.empty", 1000000, "files of the memory and open-time benchmarks")
	// benchExtents gives the files of BenchmarkOpen and
	// BenchmarkCheckpointEncode a one-block extent each (what a small
	// file has), so the checks of extents are priced too.
	benchExtents = flag.Bool("bench.extents", false, "files of the open-time and checkpoint benchmarks get a one-block extent each")
)

// giveExtents gives files f0..f(n-1) of the root a one-block extent and a
// one-block size each, as a write-back would, without writing data.
func giveExtents(b *testing.B, v *Volume, n int) {
	b.Helper()
	if !*benchExtents {
		return
	}
	for i := range n {
		a := must[Attr](b)(v.Lookup(root, RootIno, "f"+strconv.Itoa(i)))
		v.mu.Lock()
		var none uint64
		e, err := v.space.alloc(v.dataStart, 1, &none)
		if err == nil {
			rec := v.inodes.get(a.Ino).record(a.Ino)
			rec.Size = uint64(v.blockSize)
			_, err = v.commit(rec, format.ExtentsRec{Ino: uint64(a.Ino), Extents: []format.Extent{{Physical: e.Off, Len: 1}}})
		}
		v.mu.Unlock()
		ok(b, err)
	}
}

// benchVolume makes a volume on a sparse image file of size bytes.
func benchVolume(b *testing.B, size int64, opts Options) (*Volume, *device.File, string) {
	return benchVolumeMkfs(b, size, opts, MkfsOptions{})
}

// benchVolumeMkfs is benchVolume on an image made with mo.
func benchVolumeMkfs(b *testing.B, size int64, opts Options, mo MkfsOptions) (*Volume, *device.File, string) {
	b.Helper()
	path := filepath.Join(b.TempDir(), "img")
	dev, err := device.Open(path, device.Options{Create: true, Size: size})
	ok(b, err)
	ok(b, Mkfs(dev, mo))
	v, err := Open(dev, opts)
	ok(b, err)
	b.Cleanup(func() { dev.Close() })
	return v, dev, path
}

// parallel runs fn(worker, i) for i in [0, n) on 2 goroutines, each with
// its own half, and returns the operations per second.
func parallel(b *testing.B, n int, fn func(w, i int) error) float64 {
	b.Helper()
	start := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for w := range 2 {
		wg.Go(func() {
			for i := w; i < n; i += 2 {
				if err := fn(w, i); err != nil {
					errs[w] = err
					return
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		ok(b, err)
	}
	return float64(n) / time.Since(start).Seconds()
}

// smallFileOps are the four phases of the small-file benchmark, for worker
// w (0 or 1, each with its own directory) and file i.
type smallFileOps struct {
	create, read, stat, del func(w, i int) error
	sync, done              func() error
}

// BenchmarkSmallFiles is the in-process small-file figure: 2 goroutines, each
// in its own directory, create+write+close, read, stat and delete
// -bench.files 4 KiB files. The same phases through the os package on the
// host filesystem run beside it for a ratio. Run with -benchtime=1x.
func BenchmarkSmallFiles(b *testing.B) {
	n := *benchFiles
	for _, impl := range []struct {
		name string
		make func(b *testing.B) smallFileOps
	}{{"volume", volumeOps}, {"os", osOps}} {
		b.Run(impl.name, func(b *testing.B) {
			for range b.N {
				ops := impl.make(b)
				create := parallel(b, n, ops.create)
				ok(b, ops.sync())
				read := parallel(b, n, ops.read)
				stat := parallel(b, n, ops.stat)
				del := parallel(b, n, ops.del)
				ok(b, ops.done())
				b.ReportMetric(create, "creates/s")
				b.ReportMetric(read, "reads/s")
				b.ReportMetric(stat, "stats/s")
				b.ReportMetric(del, "deletes/s")
			}
		})
	}
}

func volumeOps(b *testing.B) smallFileOps {
	v, _, _ := benchVolume(b, int64(*benchFiles)*4096*2+256<<20, Options{})
	data := pattern(4096, 1)
	var dirs [2]Ino
	for w := range 2 {
		dirs[w] = must[Attr](b)(v.Mkdir(root, RootIno, "d"+strconv.Itoa(w), 0o755)).Ino
	}
	name := func(i int) string { return "f" + strconv.Itoa(i) }
	bufs := [2][]byte{make([]byte, 4096), make([]byte, 4096)}
	return smallFileOps{
		create: func(w, i int) error {
			_, h, err := v.Create(root, dirs[w], name(i), 0o644, syscall.O_WRONLY)
			if err != nil {
				return err
			}
			if _, err := h.WriteAt(data, 0); err != nil {
				return err
			}
			return h.Release()
		},
		read: func(w, i int) error {
			a, err := v.Lookup(root, dirs[w], name(i))
			if err != nil {
				return err
			}
			h, err := v.OpenFile(a.Ino, syscall.O_RDONLY)
			if err != nil {
				return err
			}
			if k, err := h.ReadAt(bufs[w], 0); k != 4096 {
				return fmt.Errorf("read %d bytes: %v", k, err)
			}
			return h.Release()
		},
		stat: func(w, i int) error {
			_, err := v.Lookup(root, dirs[w], name(i))
			return err
		},
		del:  func(w, i int) error { return v.Unlink(root, dirs[w], name(i)) },
		sync: v.Sync,
		done: v.Close,
	}
}

// osOps runs the phases on the host filesystem (no fsync, like the volume).
func osOps(b *testing.B) smallFileOps {
	base := b.TempDir()
	data := pattern(4096, 1)
	path := func(w, i int) string { return filepath.Join(base, "d"+strconv.Itoa(w), "f"+strconv.Itoa(i)) }
	for w := range 2 {
		ok(b, os.Mkdir(filepath.Join(base, "d"+strconv.Itoa(w)), 0o755))
	}
	bufs := [2][]byte{make([]byte, 4096), make([]byte, 4096)}
	return smallFileOps{
		create: func(w, i int) error { return os.WriteFile(path(w, i), data, 0o644) },
		read: func(w, i int) error {
			f, err := os.Open(path(w, i))
			if err != nil {
				return err
			}
			if _, err := io.ReadFull(f, bufs[w]); err != nil {
				return err
			}
			return f.Close()
		},
		stat: func(w, i int) error { _, err := os.Stat(path(w, i)); return err },
		del:  func(w, i int) error { return os.Remove(path(w, i)) },
		sync: func() error { return nil },
		done: func() error { return nil },
	}
}

// heapAfterGC returns the live heap after a full collection.
func heapAfterGC() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkMemoryPerFile reports heap bytes per file, beyond the name, for
// -bench.empty empty files in one directory and for -bench.files 4 KiB
// files. Run with -benchtime=1x.
func BenchmarkMemoryPerFile(b *testing.B) {
	for _, tc := range []struct {
		name string
		n    int
		size int
	}{{"empty", *benchEmpty, 0}, {"4KiB", *benchFiles, 4096}} {
		b.Run(tc.name, func(b *testing.B) {
			data := pattern(tc.size, 1)
			for range b.N {
				v, _, _ := benchVolume(b, int64(tc.n)*(bytesPerInode+int64(tc.size))*2+256<<20, Options{CommitInterval: -1})
				before := heapAfterGC()
				names := 0
				for i := range tc.n {
					name := "f" + strconv.Itoa(i)
					names += len(name)
					_, h, err := v.Create(root, RootIno, name, 0o644, syscall.O_WRONLY)
					ok(b, err)
					if tc.size > 0 {
						must[int](b)(h.WriteAt(data, 0))
					}
					ok(b, h.Release())
				}
				ok(b, v.Sync()) // the log's buffers are not per-file state
				after := heapAfterGC()
				b.ReportMetric((float64(after)-float64(before)-float64(names))/float64(tc.n), "B/file+name")
				b.ReportMetric(float64(names)/float64(tc.n), "name-B/file")
				ok(b, v.Close())
			}
		})
	}
}

// BenchmarkOpen reports the open time of a volume of -bench.empty empty
// files after a clean close and after a crash (the device left as the last
// log sync made it). Run with -benchtime=1x.
func BenchmarkOpen(b *testing.B) {
	n := *benchEmpty
	for range b.N {
		v, dev, path := benchVolume(b, int64(n)*(bytesPerInode*2+4096)+256<<20, Options{CommitInterval: -1})
		for i := range n {
			must[Attr](b)(v.Mknod(root, RootIno, "f"+strconv.Itoa(i), 0o644, 0))
		}
		giveExtents(b, v, n)
		ok(b, v.Close())
		ok(b, dev.Close())
		clean, cleanCPU := timeOpen(b, path, func(v *Volume) {
			// Leave it as a crash would: changes synced to the log, no
			// checkpoint, not clean.
			for i := range n / 2 {
				ok(b, v.Unlink(root, RootIno, "f"+strconv.Itoa(i)))
			}
			ok(b, v.Sync())
		})
		crashed, crashedCPU := timeOpen(b, path, func(v *Volume) { ok(b, v.Close()) })
		b.ReportMetric(clean.Seconds(), "s-open-clean")
		b.ReportMetric(crashed.Seconds(), "s-open-after-crash")
		b.ReportMetric(cleanCPU.Seconds(), "cpu-s-open-clean")
		b.ReportMetric(crashedCPU.Seconds(), "cpu-s-open-after-crash")
	}
}

// timeOpen opens the image at path and returns the wall and CPU time
// (all threads, the collector's included: the machine is shared, so CPU
// time is the steadier figure); then it runs after on the volume and closes
// the device (without closing the volume).
func timeOpen(b *testing.B, path string, after func(*Volume)) (wall, cpu time.Duration) {
	dev, err := device.Open(path, device.Options{})
	ok(b, err)
	runtime.GC()
	cpu0, start := cputime.Process(), time.Now()
	v, err := Open(dev, Options{CommitInterval: -1})
	wall, cpu = time.Since(start), cputime.Process()-cpu0
	ok(b, err)
	after(v)
	ok(b, dev.Close())
	return wall, cpu
}

// BenchmarkInline measures what Options.InlineThreshold trades: heap bytes
// per file and the cost of reading a file, for files kept inline and the
// same files in blocks. Run with -benchtime=1x.
func BenchmarkInline(b *testing.B) {
	const n = 20000
	for _, size := range []int{64, 256, 1024, 4096} {
		for _, inline := range []bool{false, true} {
			opts := Options{CommitInterval: -1, InlineThreshold: -1}
			if inline {
				opts.InlineThreshold = size
			}
			b.Run(fmt.Sprintf("%dB/inline=%v", size, inline), func(b *testing.B) {
				data := pattern(size, 1)
				for range b.N {
					v, _, _ := benchVolume(b, n*8192+256<<20, opts)
					before := heapAfterGC()
					inos := make([]Ino, n)
					for i := range n {
						inos[i] = writeFile(b, v, RootIno, "f"+strconv.Itoa(i), data)
					}
					ok(b, v.Sync())
					heap := float64(heapAfterGC()-before) / n
					buf := make([]byte, size)
					start := time.Now()
					for _, ino := range inos {
						h := must[*Handle](b)(v.OpenFile(ino, syscall.O_RDONLY))
						must[int](b)(h.ReadAt(buf, 0))
						ok(b, h.Release())
					}
					b.ReportMetric(float64(time.Since(start).Nanoseconds())/n, "ns/read")
					b.ReportMetric(heap, "B/file")
					ok(b, v.Close())
				}
			})
		}
	}
}

// BenchmarkCheckpointStall times metadata changes (chmod) made while a
// periodic checkpoint of -bench.files files runs: the old way, holding
// the metadata read lock across the device writes ("locked", what Close
// and a full log still do), against checkpointConcurrent. It reports the
// longest chmod, the checkpoint's duration and the chmods done meanwhile.
func BenchmarkCheckpointStall(b *testing.B) {
	v := emptyFiles(b, *benchFiles)
	target := must[Attr](b)(v.Lookup(root, RootIno, "f0")).Ino
	for _, mode := range []struct {
		name string
		ckpt func() error
	}{
		{"locked", func() error { v.mu.Lock(); defer v.mu.Unlock(); return v.checkpoint(false) }},
		{"concurrent", v.checkpointConcurrent},
	} {
		b.Run(mode.name, func(b *testing.B) {
			var worst, took time.Duration
			ops := 0
			for i := range b.N {
				done := make(chan error)
				start := time.Now()
				go func() { done <- mode.ckpt() }()
				for running := true; running; {
					select {
					case err := <-done:
						ok(b, err)
						running = false
						continue
					default:
					}
					t0 := time.Now()
					must[Attr](b)(v.SetAttr(root, target, SetAttrIn{Valid: SetMode, Mode: uint32(0o600 + i%2)}))
					worst = max(worst, time.Since(t0))
					ops++
				}
				took += time.Since(start)
			}
			b.ReportMetric(float64(worst.Microseconds())/1000, "max-chmod-ms")
			b.ReportMetric(float64(took.Milliseconds())/float64(b.N), "ckpt-ms")
			b.ReportMetric(float64(ops)/float64(b.N), "chmods/ckpt")
		})
	}
	ok(b, v.Close())
}

// BenchmarkDirtyExpire prices Options.DirtyExpire's worst case: files
// appended to while they stay open, so each expiry writes back a file that
// is dirtied again (its last chunk read back in). 16 files take 4 KiB
// writes in turn, sequential within the first MiB of each; the expiry is 1 ms instead of 1 s to make a second's
// run see a thousand periods. It reports write-backs per MiB appended.
func BenchmarkDirtyExpire(b *testing.B) {
	for _, expire := range []time.Duration{-1, time.Millisecond} {
		b.Run("expire="+expire.String(), func(b *testing.B) {
			v, _, _ := benchVolume(b, 1<<30, Options{CommitInterval: time.Hour, DirtyExpire: expire})
			hs := make([]*Handle, 16)
			for i := range hs {
				_, hs[i] = must2(b)(v.Create(root, RootIno, "f"+strconv.Itoa(i), 0o644, syscall.O_WRONLY))
			}
			buf := make([]byte, 4<<10)
			off := make([]int64, len(hs))
			before := v.acct.writebacks.Value()
			b.ResetTimer()
			for i := range b.N {
				k := i % len(hs)
				must[int](b)(hs[k].WriteAt(buf, off[k]))
				off[k] = (off[k] + int64(len(buf))) % (1 << 20) // bounded space
			}
			b.StopTimer()
			b.ReportMetric(float64(v.acct.writebacks.Value()-before)/(float64(b.N)*4/1024), "writebacks/MiB")
			for _, h := range hs {
				ok(b, h.Release())
			}
			ok(b, v.Close())
		})
	}
}

// BenchmarkCheckpointEncode prices the encoding of a checkpoint of
// -bench.files empty files (an inode and an entry each; with
// -bench.extents, a one-block extent each too) into memory, in one slice;
// the periodic checkpoint spends it in slices of snapshotBudget. It
// reports ns and allocations per file, without and with the guard's
// check (guard.go): what the check adds to every checkpoint. The buffer's
// chunks come from the volume's pool, as the periodic checkpoint's do.
func BenchmarkCheckpointEncode(b *testing.B) {
	v := emptyFiles(b, *benchFiles)
	for _, guard := range []bool{false, true} {
		b.Run(fmt.Sprintf("guard=%v", guard), func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				buf := format.RecordBuffer{Pool: v.opts.Pool}
				var c *metaCheck
				v.mu.RLock()
				if guard {
					c = newMetaCheck(v, v.inodes.next, true, true)
				}
				err := v.records(&buf, c)
				v.mu.RUnlock()
				buf.Release()
				ok(b, err)
				if guard {
					c.finish()
					c.finishBlocks(nil)
					if len(c.findings) > 0 {
						b.Fatal(c.problems())
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(*benchFiles), "ns/file")
		})
	}
}

// emptyFiles returns a volume of n empty files f0, f1, ... in the root,
// committed.
func emptyFiles(b *testing.B, n int) *Volume {
	v, _, _ := benchVolume(b, int64(n)*(bytesPerInode*4+4096)+256<<20, Options{CommitInterval: -1})
	for i := range n {
		must[Attr](b)(v.Mknod(root, RootIno, "f"+strconv.Itoa(i), 0o644, 0))
	}
	giveExtents(b, v, n)
	ok(b, v.Sync())
	return v
}

// BenchmarkWrite64K times the life of a 64 KiB file up to its write-back,
// per file (ns/op): create, one 64 KiB write, close (Release writes it
// back), as cp of a 64 KiB file does. The files are deleted a batch at a
// time off the timer, so the image stays small. cpu-ns/op, the process's
// CPU time per file without the deletes, is the steadier figure on a
// shared machine (see internal/cputime).
func BenchmarkWrite64K(b *testing.B) {
	const batch = 1024
	v, _, _ := benchVolume(b, 256<<20, Options{})
	b.Cleanup(func() { ok(b, v.Close()) })
	data := pattern(64<<10, 1)
	dir := must[Attr](b)(v.Mkdir(root, RootIno, "d", 0o755)).Ino
	b.SetBytes(int64(len(data)))
	var cpu time.Duration
	i, from := 0, cputime.Process()
	for b.Loop() {
		_, h, err := v.Create(root, dir, "f"+strconv.Itoa(i%batch), 0o644, syscall.O_WRONLY)
		ok(b, err)
		must[int](b)(h.WriteAt(data, 0))
		ok(b, h.Release())
		if i++; i%batch == 0 {
			b.StopTimer()
			cpu += cputime.Process() - from
			for k := range batch {
				ok(b, v.Unlink(root, dir, "f"+strconv.Itoa(k)))
			}
			ok(b, v.Sync())
			from = cputime.Process()
			b.StartTimer()
		}
	}
	cpu += cputime.Process() - from
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(i), "cpu-ns/op")
}

// BenchmarkReadPlan times a read plan of 4 KiB of a committed file and
// its Done, on all CPUs at once, one file each: what the volume does for
// a READ the adapter answers by splice (the device read is the kernel's).
// With writes running beside it (writers=1) the frees of the rewritten
// file keep the gate busy.
func BenchmarkReadPlan(b *testing.B) {
	for _, writers := range []int{0, 1} {
		b.Run("writers="+strconv.Itoa(writers), func(b *testing.B) {
			v, _, _ := benchVolume(b, 256<<20, Options{CommitInterval: -1})
			b.Cleanup(func() { ok(b, v.Close()) })
			data := pattern(64<<10, 1)
			var files []Ino
			for i := range runtime.GOMAXPROCS(0) {
				files = append(files, writeFile(b, v, RootIno, "f"+strconv.Itoa(i), data))
			}
			w := writeFile(b, v, RootIno, "w", data)
			stop := make(chan struct{})
			var wg sync.WaitGroup
			for range writers {
				wg.Go(func() {
					h, err := v.OpenFile(w, syscall.O_WRONLY)
					for err == nil {
						select {
						case <-stop:
							ok(b, h.Release())
							return
						default:
						}
						if _, err = h.WriteAt(data[:4096], 0); err == nil {
							err = errors.Join(h.Flush(), v.Sync())
						}
					}
					b.Error(err)
				})
			}
			var next atomic.Int32
			defer cputime.PerOp(b)()
			b.RunParallel(func(pb *testing.PB) {
				h, err := v.OpenFile(files[int(next.Add(1)-1)%len(files)], syscall.O_RDONLY)
				if err != nil {
					b.Error(err)
					return
				}
				defer h.Release()
				var off int64
				buf := make([]byte, 4096)
				for pb.Next() {
					p, err := h.ReadPlan(off, buf)
					if err != nil || p.Len != 4096 {
						b.Errorf("plan: %v, device length %d", err, p.Len)
						return
					}
					p.Done()
					off = (off + 4096) % int64(len(data))
				}
			})
			close(stop)
			wg.Wait()
		})
	}
}

// BenchmarkReadVerified times ReadAt of committed data from an image
// file (the host's page cache holds it: the device read is a copy) on a
// volume with block checksums, which checks every block it reads, and on
// one without, at 4 KiB, 64 KiB and 1 MiB: what verifying costs a read
// that reaches the daemon, besides the device's own time.
func BenchmarkReadVerified(b *testing.B) {
	for _, size := range []int{4 << 10, 64 << 10, 1 << 20} {
		for _, sums := range []bool{true, false} {
			b.Run(fmt.Sprintf("size=%d/checksums=%v", size, sums), func(b *testing.B) {
				v, _, _ := benchVolumeMkfs(b, 256<<20, Options{CommitInterval: -1}, MkfsOptions{NoBlockSums: !sums})
				b.Cleanup(func() { ok(b, v.Close()) })
				ino := writeFile(b, v, RootIno, "f", pattern(size, 1))
				ok(b, v.Sync())
				h := must[*Handle](b)(v.OpenFile(ino, syscall.O_RDONLY))
				defer h.Release()
				buf := make([]byte, size)
				b.SetBytes(int64(size))
				defer cputime.PerOp(b)()
				for b.Loop() {
					if _, err := h.ReadAt(buf, 0); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkBlockSumsMemory reports the heap the checksums of 2^20 blocks
// in use take (4 GiB of data in 4 KiB blocks), per block.
func BenchmarkBlockSumsMemory(b *testing.B) {
	const blocks = 1 << 20
	for b.Loop() {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		s := newBlockSums(blocks, accounting.NewRegistry().Layer("fs").Type("block_sums"))
		sums := make([]uint32, 256)
		for blk := uint64(0); blk < blocks; blk += 256 {
			s.set(blk, sums)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/blocks, "heap-B/block")
		runtime.KeepAlive(s)
	}
}

// BenchmarkBlockSumsPerFile reports what the checksums of a volume's
// files cost in memory as the accounting shows it (layer "fs", type
// "block_sums"): files of one 4 KiB block, and files of 16, whose 15
// further blocks give the cost of a further block. The files are written
// as a directory's files are, next to each other.
func BenchmarkBlockSumsPerFile(b *testing.B) {
	const files = 20000
	for b.Loop() {
		per := map[int]float64{}
		for _, blocks := range []int{1, 16} {
			reg := accounting.NewRegistry()
			v, _, _ := benchVolume(b, int64(files*blocks+files)*4096+64<<20, Options{CommitInterval: -1, Accounting: reg})
			dir := must[Attr](b)(v.Mkdir(root, RootIno, "d", 0o755)).Ino
			data := pattern(blocks*4096, 1)
			for i := range files {
				writeFile(b, v, dir, "f"+strconv.Itoa(i), data)
			}
			ok(b, v.Sync())
			l, _ := reg.Snapshot().Layer("fs")
			st, _ := l.Type("block_sums")
			per[blocks] = float64(st.Bytes) / files
			ok(b, v.Close())
		}
		b.ReportMetric(per[1], "B/one-block-file")
		b.ReportMetric((per[16]-per[1])/15, "B/further-block")
	}
}

// BenchmarkWriteBack times the write-back of a rewritten file of 4 KiB,
// 64 KiB and 1 MiB, with and without block checksums: one write over the
// whole file and its Flush, which places the data, writes it and commits
// the new extent map (a Sync every 64 files frees the old blocks). Its
// allocations per op are the metadata's (the new extent map, the records,
// the checksums); the data's buffers are pooled.
func BenchmarkWriteBack(b *testing.B) {
	for _, size := range []int{4 << 10, 64 << 10, 1 << 20} {
		for _, sums := range []bool{true, false} {
			b.Run(fmt.Sprintf("size=%d/checksums=%v", size, sums), func(b *testing.B) {
				v, _, _ := benchVolumeMkfs(b, 256<<20, Options{CommitInterval: -1}, MkfsOptions{NoBlockSums: !sums})
				b.Cleanup(func() { ok(b, v.Close()) })
				data := pattern(size, 1)
				ino := writeFile(b, v, RootIno, "f", data)
				h := must[*Handle](b)(v.OpenFile(ino, syscall.O_RDWR))
				defer h.Release()
				b.SetBytes(int64(size))
				b.ReportAllocs()
				defer cputime.PerOp(b)()
				i := 0
				for b.Loop() {
					must[int](b)(h.WriteAt(data, 0))
					ok(b, h.Flush())
					if i++; i%64 == 0 {
						ok(b, v.Sync())
					}
				}
			})
		}
	}
}

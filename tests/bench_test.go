package tests

import (
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	sfuse "github.com/smallfs/smallfs/fs/fuse"
)

// Figures for docs/PERFORMANCE.md and docs/FUSE.md. Run them without -race
// (the race detector multiplies both time and memory):
//
//	go test ./tests -run '^$' -bench . -benchtime 1x
var (
	benchFiles   = flag.Int("bench.files", 1_000_000, "files BenchmarkMemoryPerFile creates")
	benchEntries = flag.Int("bench.entries", 100_000, "entries in BenchmarkList's directory")
)

// BenchmarkMemoryPerFile creates -bench.files empty files (1000 per
// directory) on a daemon process, runs ls -lR over them, and reports the
// daemon's memory per file, net of the freshly mounted daemon's: live heap
// and resident size after a full collection, and peak resident size (what
// the garbage collector's headroom costs on top).
func BenchmarkMemoryPerFile(b *testing.B) {
	for range b.N {
		dir := b.TempDir()
		img, mnt := filepath.Join(dir, "image"), filepath.Join(dir, "mnt")
		n := *benchFiles
		makeImage(b, img, max(int64(n)*2048, 1<<30))
		must(b, os.Mkdir(mnt, 0o755))
		d := startDaemon(b, img, mnt, sfuse.ReadDirPlusAuto)
		heap0, rss0, _ := d.memory(b)

		const perDir = 1000
		for i := range (n + perDir - 1) / perDir {
			must(b, os.Mkdir(filepath.Join(mnt, fmt.Sprintf("d%04d", i)), 0o755))
		}
		parallel(b, 2, n, func(i int) error {
			return syscall.Mknod(filepath.Join(mnt, fmt.Sprintf("d%04d", i/perDir), fmt.Sprintf("f%07d", i)), syscall.S_IFREG|0o644, 0)
		})
		ls := exec.Command("ls", "-lR", mnt)
		ls.Stdout, ls.Env = nil, append(os.Environ(), "LC_ALL=C")
		must(b, ls.Run())
		heap, rss, peak := d.memory(b)
		d.stop(b)
		b.ReportMetric(float64(heap-heap0)/float64(n), "heap-B/file")
		b.ReportMetric(float64(rss-rss0)/float64(n), "rss-B/file")
		b.ReportMetric(float64(peak-rss0)/float64(n), "peak-rss-B/file")
	}
}

// BenchmarkList times ls and ls -l of a directory of -bench.entries files
// on a cold mount (mounted afresh for each listing, so the kernel has no
// cached entries), under each READDIRPLUS policy, and reports the requests
// each listing cost.
func BenchmarkList(b *testing.B) {
	dir := b.TempDir()
	img, mnt := filepath.Join(dir, "image"), filepath.Join(dir, "mnt")
	makeImage(b, img, 1<<30)
	m := mountImage(b, img, mnt, config{})
	must(b, os.Mkdir(m.path("big"), 0o755))
	parallel(b, 2, *benchEntries, func(i int) error {
		return syscall.Mknod(m.path("big", fmt.Sprintf("entry-%07d", i)), syscall.S_IFREG|0o644, 0)
	})
	m.unmount()
	for _, policy := range []sfuse.ReadDirPlus{sfuse.ReadDirPlusAuto, sfuse.ReadDirPlusAlways, sfuse.ReadDirPlusNever} {
		for _, args := range [][]string{{}, {"-l"}} {
			name := fmt.Sprintf("%s/ls%s", policy, map[bool]string{true: "-l"}[len(args) > 0])
			b.Run(name, func(b *testing.B) {
				var reqs [4]uint64
				ops := []string{"READDIR", "READDIRPLUS", "LOOKUP", "GETXATTR"}
				for range b.N {
					b.StopTimer()
					m := mountImage(b, img, mnt, config{mount: sfuse.Options{ReadDirPlus: policy}})
					ls := exec.Command("ls", append(args, m.path("big"))...)
					ls.Env = append(os.Environ(), "LC_ALL=C")
					b.StartTimer()
					must(b, ls.Run())
					b.StopTimer()
					for i, op := range ops {
						reqs[i] += m.requests(op)
					}
					m.unmount()
				}
				for i, op := range ops {
					b.ReportMetric(float64(reqs[i])/float64(b.N), op+"/op")
				}
			})
		}
	}
}

// BenchmarkSmallFiles runs smallfile-style phases over -bench.small files
// of 4 KiB in one directory, one phase per sub-benchmark, and reports
// files per second and the FUSE requests each file cost. Phases that need
// files find them made (untimed) and the mount fresh, so the kernel's caches
// are cold as after a remount. Each phase runs in the default mode and in
// no-open mode (fs/fuse Options.NoOpen); with -count the two alternate.
var benchSmall = flag.Int("bench.small", 5000, "files per BenchmarkSmallFiles phase")

func BenchmarkSmallFiles(b *testing.B) {
	data := pattern(1, 4096)
	phases := []struct {
		name    string
		prepare bool
		op      func(p string) error
	}{
		{"create", false, func(p string) error { return os.WriteFile(p, data, 0o644) }},
		{"read", true, func(p string) error { _, err := os.ReadFile(p); return err }},
		{"append", true, func(p string) error {
			f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				return err
			}
			_, err = f.Write(data[:1024])
			return errors.Join(err, f.Close())
		}},
		{"stat", true, func(p string) error { _, err := os.Lstat(p); return err }},
		{"chmod", true, func(p string) error { return os.Chmod(p, 0o600) }},
		{"delete", true, os.Remove},
	}
	for _, noOpen := range []bool{false, true} {
		b.Run(map[bool]string{false: "default", true: "no-open"}[noOpen], func(b *testing.B) {
			for _, ph := range phases {
				b.Run(ph.name, func(b *testing.B) {
					smallFilesPhase(b, noOpen, ph.prepare, ph.op, data)
				})
			}
		})
	}
}

// smallFilesPhase times one phase of BenchmarkSmallFiles on a fresh mount,
// cold (remounted) when the files are prepared first. The timed part ends
// with a commit (volume Sync), so that write-back a mode defers past the
// phase is still paid in it.
func smallFilesPhase(b *testing.B, noOpen, prepare bool, op func(string) error, data []byte) {
	n := *benchSmall
	var reqs uint64
	for range b.N {
		b.StopTimer()
		m := newMount(b, func(c *config) { c.mount.NoOpen = noOpen })
		paths := make([]string, n)
		for i := range paths {
			paths[i] = m.path(fmt.Sprintf("f%06d", i))
			if prepare {
				must(b, os.WriteFile(paths[i], data, 0o644))
			}
		}
		if prepare {
			m.remount()
		}
		before := m.requestCounts()
		b.StartTimer()
		parallel(b, 2, n, func(i int) error { return op(paths[i]) })
		must(b, m.vol.Sync())
		b.StopTimer()
		after := m.requestCounts()
		var mix []string
		for _, op := range slices.Sorted(maps.Keys(after)) {
			if d := after[op] - before[op]; d > 0 {
				reqs += d
				mix = append(mix, fmt.Sprintf("%s %.2f", op, float64(d)/float64(n)))
			}
		}
		b.Logf("requests per file: %s", strings.Join(mix, ", "))
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "files/s")
	b.ReportMetric(float64(reqs)/float64(n*b.N), "req/file")
}

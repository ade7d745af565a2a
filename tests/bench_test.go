package tests

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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
// daemon's memory per file: live heap after a full collection, and
// resident size, both net of the freshly mounted daemon's.
func BenchmarkMemoryPerFile(b *testing.B) {
	for range b.N {
		dir := b.TempDir()
		img, mnt := filepath.Join(dir, "image"), filepath.Join(dir, "mnt")
		n := *benchFiles
		makeImage(b, img, max(int64(n)*2048, 1<<30))
		must(b, os.Mkdir(mnt, 0o755))
		d := startDaemon(b, img, mnt, sfuse.ReadDirPlusAuto)
		heap0, rss0 := d.memory(b)

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
		heap, rss := d.memory(b)
		d.stop(b)
		b.ReportMetric(float64(heap-heap0)/float64(n), "heap-B/file")
		b.ReportMetric(float64(rss-rss0)/float64(n), "rss-B/file")
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

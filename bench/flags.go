package bench

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/smallfs/smallfs/fs/device"
)

// config is the parsed command line.
type config struct {
	w           Workload
	sizes       []int64
	rounds      int
	targets     []string
	pools       bool
	checksums   bool
	jsonPath    string
	svgPath     string
	scratch     string
	smallfsBin  string
	smallfsOpts string
	prealloc    device.Prealloc
	base        string
	replay      string
	scale       bool // --scale: the scale run (scale.go) instead of the sequence
	scaleFiles  int
	tree        bool // --tree: the real-tree steps (tree.go) instead of the sequence
	treeSrc     string
	treePattern string
	age         bool      // --age: the aging run (agerun.go)
	ag          ageConfig // its flags
}

// DefaultTargets are what `smallfs bench` compares without arguments.
func DefaultTargets() []string { return []string{"smallfs", "loopback", "ext4-loop"} }

const usage = `Usage: smallfs bench [FLAGS] [TARGET...]

Runs a smallfile-style sequence (create, read, cold-read, append, stat,
stat-again, chmod, ls-l, setxattr, getxattr, rename, delete-renamed, mkdir,
rmdir, swift-put, cleanup) on each TARGET, interleaved over the rounds,
and prints the median files/s per operation, the spread between rounds,
and the ratio of the base target (smallfs) to each other one. cold-read
reads every file again after dropping the kernel's caches (sync,
drop_caches), so the reads reach each filesystem and its disk.

Targets (default: smallfs loopback ext4-loop):
  smallfs     mkfs an image in the scratch directory, mount it, run,
              unmount, fsck it (a run that leaves it unclean fails)
  smallfs:OPTS  the same with -o OPTS added, beside plain smallfs to
              compare settings (e.g. smallfs:no_open=on)
  loopback    go-fuse's passthrough filesystem over an ext4 loop image
              (over the scratch directory where loop mounts are refused)
  fuse2fs     e2fsprogs' fuse2fs serving an ext4 image (skipped when
              fuse2fs is not installed: apt-get install fuse2fs)
  ext4-loop   kernel ext4 on a loop-mounted image (needs root)
  tmpfs       kernel tmpfs (needs root)
  DIRECTORY   an existing directory: whatever is mounted there

Scale (--scale, root): one smallfs image filled through the mount with
--scale-files files, 1,000 to a directory, every other one 4 KiB, from
--threads threads: the first and the last 1% timed apart, each lstat-ed
with the caches dropped (create and stat rates at 1% against 100%), then
ls -lR and find -ls of everything (caches dropped), umount, mount (and
the memory 2 s later), umount and fsck, with the daemon's CPU, memory and
requests at every step.
--json writes the report.

Tree (--tree, root): a tarball of --tree-src (the Go distribution's src/,
11,000 to 14,000 files by version) made in the scratch directory, then on
each target, interleaved over --rounds, a fresh filesystem for each: tar
x; caches dropped, lstat of every path (git status); caches dropped, grep
-r of --tree-pattern (its count checked against the source's); rm -rf.
Medians of the rounds and the base target's speed over each other's.

With --age, ages each target instead (smallfs, smallfs:OPTS, ext4-loop,
loopback; the same three by default): fills a --device-size device to
--fill % with a tree of files whose sizes are drawn from --size-tree,
then runs --rounds rounds (default 100) of creates, rewrites, appends,
renames across directories and deletes, the same on every target, and
every --every rounds measures, aged and on a fresh copy of the same tree
on a fresh device: extents per file, directory spread, free-space
fragmentation, a cold read of the whole tree in directory order (MB/s,
files/s) and --batch creates and appends (files/s). Caches are dropped
before each cold read (root).

Flags:
`

// parseFlags parses args; with -h or --help it prints the usage to
// stdout and returns flag.ErrHelp. Errors are left to the caller to print.
func parseFlags(args []string, stdout io.Writer) (*config, error) {
	c := &config{}
	fs := flag.NewFlagSet("smallfs bench", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	fs.IntVar(&c.w.Threads, "threads", 2, "worker threads")
	fs.IntVar(&c.w.Files, "files", 5000, "files per thread")
	sizes := fs.String("sizes", "4K,64K", "file sizes, comma-separated (K, M suffixes)")
	fs.IntVar(&c.w.FilesPerDir, "files-per-dir", 100, "files in one directory")
	fs.BoolVar(&c.w.Fsync, "fsync", false, "fsync every file in create and append (fs_mark-like)")
	fs.IntVar(&c.w.XattrSize, "xattr-size", 64, "bytes of the xattr value")
	noVerify := fs.Bool("no-verify", false, "do not check the bytes read back")
	fs.IntVar(&c.rounds, "rounds", 3, "rounds; each runs every size on every target")
	fs.BoolVar(&c.pools, "pools", false, "also run smallfs with -o "+PoolOption+" (target smallfs-nopool)")
	fs.BoolVar(&c.checksums, "checksums", false, "also run smallfs on images made with mkfs "+NoSumsFlag+" (target smallfs-nosum: reads spliced, unverified)")
	fs.StringVar(&c.jsonPath, "json", "", "write the full report as JSON to `FILE`")
	fs.StringVar(&c.svgPath, "svg", "", "write a chart of files/s per operation as SVG to `FILE`")
	fs.StringVar(&c.scratch, "scratch", "", "make the scratch directory in `DIR` (default $TMPDIR)")
	fs.StringVar(&c.smallfsBin, "smallfs-bin", "", "smallfs executable to drive (default: this one, or built from the source)")
	fs.StringVar(&c.smallfsOpts, "smallfs-opts", "", "extra -o mount options for smallfs")
	fs.Func("preallocate", "how every image file gets its blocks: `falloc` (default), full (zeros written) or off (sparse)", func(v string) (err error) {
		c.prealloc, err = device.ParsePrealloc(v)
		return err
	})
	fs.StringVar(&c.replay, "replay", "", "do not run: print the table and write --svg from a --json report `FILE`")
	fs.BoolVar(&c.scale, "scale", false, "instead of the sequence: fill one smallfs with --scale-files files through the mount, then list, unmount, mount and fsck it (see Scale above)")
	fs.IntVar(&c.scaleFiles, "scale-files", 1_000_000, "files of the --scale run, 1,000 to a directory")
	fs.BoolVar(&c.tree, "tree", false, "instead of the sequence: unpack a real source tree, stat it, grep it and remove it on each target (see Tree above)")
	fs.StringVar(&c.treeSrc, "tree-src", "", "the directory --tree makes its tarball of (default: the Go distribution's src/)")
	fs.StringVar(&c.treePattern, "tree-pattern", "func main()", "the string --tree greps for")
	fs.StringVar(&c.base, "base", "", "target the ratios are of (default smallfs, else the first)")
	fs.BoolVar(&c.age, "age", false, "run the aging churn instead of the sequence (described above)")
	c.ag.register(fs)
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, usage)
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		return nil, err
	} else if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUsage, err)
	}
	c.w.NoVerify = *noVerify
	c.targets = fs.Args()
	if len(c.targets) == 0 {
		c.targets = DefaultTargets()
	}
	if c.age && (c.scale || c.tree) {
		return nil, fmt.Errorf("%w: --age, --scale and --tree are runs of their own: give one", ErrUsage)
	}
	if c.age {
		if err := c.finishAge(fs); err != nil {
			return nil, err
		}
		return c, nil
	}
	var errs []string
	var err error
	if c.sizes, err = parseSizes(*sizes); err != nil {
		errs = append(errs, err.Error())
	}
	if c.rounds < 1 || c.rounds > 100 {
		errs = append(errs, fmt.Sprintf("rounds %d: want 1 to 100", c.rounds))
	}
	if name, _, _ := strings.Cut(PoolOption, "="); c.pools && strings.Contains(","+c.smallfsOpts, ","+name+"=") {
		errs = append(errs, fmt.Sprintf("--pools sets %s= itself; leave it out of --smallfs-opts", name))
	}
	if c.scale && c.tree {
		errs = append(errs, "--scale and --tree are runs of their own: give one")
	}
	if c.tree && c.treePattern == "" {
		errs = append(errs, "--tree-pattern is empty")
	}
	if c.scale && (c.scaleFiles < 3*scalePerDir || c.scaleFiles > maxTotalFiles) {
		errs = append(errs, fmt.Sprintf("scale-files %d: want %d to %d", c.scaleFiles, 3*scalePerDir, maxTotalFiles))
	}
	if err := c.w.validate(); err != nil {
		errs = append(errs, strings.TrimPrefix(err.Error(), ErrUsage.Error()+": "))
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w: %s", ErrUsage, strings.Join(errs, "; "))
	}
	return c, nil
}

// parseSizes reads "4K,64K": byte counts with an optional binary suffix.
func parseSizes(s string) ([]int64, error) {
	var out []int64
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		shift := 0
		if n := len(f); n > 0 {
			if i := strings.IndexByte("KMG", f[n-1]&^0x20); i >= 0 {
				shift, f = 10*(i+1), f[:n-1]
			}
		}
		v, err := strconv.ParseInt(f, 10, 64)
		if err != nil || v < 0 || v > maxSize>>shift {
			return nil, fmt.Errorf("sizes %q: want sizes from 0 to 1G such as 4K,64K", s)
		}
		out = append(out, v<<shift)
	}
	return out, nil
}

package bench

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"
)

// ScaleSchema names the layout of a --scale report's JSON.
const ScaleSchema = "smallfs-bench-scale/1"

// scalePerDir is the files in one directory of the scale tree.
const scalePerDir = 1000

// ScaleReport is what `smallfs bench --scale` measured: one smallfs
// image made to hold Files files through the mount, then listed,
// unmounted, mounted again and checked.
type ScaleReport struct {
	Schema  string      `json:"schema"`
	Date    time.Time   `json:"date"`
	Machine Machine     `json:"machine"`
	Files   int         `json:"files"`
	Dirs    int         `json:"dirs"`
	Window  int         `json:"window"` // files in the first and the last window
	Threads int         `json:"threads"`
	Detail  string      `json:"detail"` // the smallfs target, its options and transport
	Steps   []ScaleStep `json:"steps"`
	// Create and Stat are the rates of the last window over the first
	// (files/s at Files against files/s at Window): 1 is no slowdown.
	Create *float64 `json:"create_ratio"`
	Stat   *float64 `json:"stat_ratio"`
	// CreateCPU and StatCPU are the daemon's CPU per file in the last
	// window over that in the first: steadier than rates on a shared
	// machine, and 1 is no slowdown here too.
	CreateCPU *float64 `json:"create_cpu_ratio"`
	StatCPU   *float64 `json:"stat_cpu_ratio"`
	// LoadBefore and LoadAfter are /proc/loadavg at the ends of the run.
	LoadBefore *LoadAvg      `json:"loadavg_before"`
	LoadAfter  *LoadAvg      `json:"loadavg_after"`
	Elapsed    time.Duration `json:"elapsed_ns"`
	Error      string        `json:"error,omitempty"`
}

// ScaleStep is one measured step of a scale run.
type ScaleStep struct {
	Name string `json:"name"`
	// Files is what the step did one file at a time (0 for a whole-tree
	// command, whose rate is not per file).
	Files   int64         `json:"files,omitempty"`
	Elapsed time.Duration `json:"elapsed_ns"`
	// DaemonCPU is the daemon's user+system time during the step; null
	// where no daemon ran through it (fsck, the remount's new daemon
	// before it answered).
	DaemonCPU *time.Duration `json:"daemon_cpu_ns"`
	// RSS is the daemon's resident memory after the step, Heap its Go
	// heap (live and not yet collected) then; MaxRSS is fsck's peak.
	RSS    int64  `json:"rss_bytes,omitempty"`
	Heap   uint64 `json:"heap_bytes,omitempty"`
	MaxRSS int64  `json:"max_rss_bytes,omitempty"`
	// CPU is a child command's own user+system time (ls, find, fsck).
	CPU *time.Duration `json:"cpu_ns"`
	// GCs is the daemon's garbage collections during the step, Requests
	// its FUSE requests by opcode (FORGETs the kernel sent in it too).
	GCs      uint32            `json:"gcs,omitempty"`
	Requests map[string]uint64 `json:"requests,omitempty"`
}

// FilesPerSec is the step's rate, 0 for a whole-tree step.
func (s ScaleStep) FilesPerSec() float64 {
	if s.Files == 0 {
		return 0
	}
	return rate(float64(s.Files), s.Elapsed)
}

// scaleRun is one --scale run in progress.
type scaleRun struct {
	c       *config
	bin     string
	s       *scratch
	img     string
	mnt     string
	opts    string
	pid     int
	files   int
	dirs    int
	wdirs   int // directories in a window
	rep     *ScaleReport
	prog    *progress
	mounted bool
}

// runScale is `smallfs bench --scale`.
func runScale(ctx context.Context, c *config, stdout, stderr io.Writer) int {
	rep, err := scale(ctx, c, stdout)
	if rep != nil {
		if err != nil {
			rep.Error = err.Error()
		}
		if werr := rep.WriteTable(stdout); werr != nil {
			err = errors.Join(err, werr)
		}
		if c.jsonPath != "" {
			b, jerr := json.MarshalIndent(rep, "", "  ")
			if jerr == nil {
				jerr = os.WriteFile(c.jsonPath, append(b, '\n'), 0o644)
			}
			err = errors.Join(err, jerr)
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "smallfs bench: %v\n", err)
		if errors.Is(err, ErrUsage) {
			return 2
		}
		return 1
	}
	return 0
}

func scale(ctx context.Context, c *config, stdout io.Writer) (rep *ScaleReport, err error) {
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("%w: --scale needs root (it drops the kernel's caches between steps)", ErrTarget)
	}
	s, err := newScratch(c.scratch, c.prealloc)
	if err != nil {
		return nil, err
	}
	defer func() {
		if rerr := s.remove(); rerr != nil {
			err = errors.Join(err, rerr)
		}
	}()
	bin, err := smallfsBinaryFor(ctx, c, s)
	if err != nil {
		return nil, err
	}
	r := &scaleRun{c: c, bin: bin, s: s, files: c.scaleFiles, prog: newProgress(stdout)}
	defer r.prog.clear()
	r.dirs = (r.files + scalePerDir - 1) / scalePerDir
	r.wdirs = max(1, r.dirs/100)
	if r.dirs < 3*r.wdirs {
		return nil, fmt.Errorf("%w: --scale-files %d: want at least %d (three directories of %d)", ErrUsage, r.files, 3*scalePerDir, scalePerDir)
	}
	r.rep = &ScaleReport{Schema: ScaleSchema, Date: time.Now(), Machine: machine(), Files: r.files, Dirs: r.dirs,
		Window: r.windowFiles(0), Threads: c.w.Threads, LoadBefore: readLoadAvg("/proc/loadavg")}
	t0 := time.Now()
	defer func() {
		r.rep.LoadAfter = readLoadAvg("/proc/loadavg")
		r.rep.Elapsed = elapsedSince(t0)
		if r.mounted {
			_ = unmount(r.mnt)
		}
	}()
	return r.rep, r.run(ctx)
}

// cpuPerFile is a step's daemon CPU per file, 0 when unknown.
func (s ScaleStep) cpuPerFile() float64 {
	if s.DaemonCPU == nil || s.Files == 0 {
		return 0
	}
	return float64(*s.DaemonCPU) / float64(s.Files)
}

// fileCount is the files of directory d: scalePerDir but in the last,
// which holds what is left.
func (r *scaleRun) fileCount(d int) int {
	if d == r.dirs-1 {
		return r.files - d*scalePerDir
	}
	return scalePerDir
}

// windowFiles is the files of the window of directories from d on.
func (r *scaleRun) windowFiles(d int) int {
	n := 0
	for i := d; i < d+r.wdirs; i++ {
		n += r.fileCount(i)
	}
	return n
}

func (r *scaleRun) run(ctx context.Context) error {
	// Half the files hold 4 KiB: their blocks, and room for the metadata
	// and its checkpoints.
	space := int64(r.files/2+1)*4096 + int64(r.files)*1024 + 256<<20
	r.img = r.s.path("scale", ".img")
	r.mnt = r.s.path("scale", "")
	if _, err := command(ctx, 10*time.Minute, r.bin, "mkfs", "--size", strconv.FormatInt(space, 10), "--preallocate", r.s.prealloc.String(), r.img); err != nil {
		return fmt.Errorf("%w: %w", ErrTarget, err)
	}
	if err := mkdirFresh(r.mnt); err != nil {
		return err
	}
	r.opts = joinOpts("log_file="+r.mnt+".log", r.c.smallfsOpts)
	if _, err := r.mount(ctx); err != nil {
		return err
	}
	st, _ := r.stats()
	r.rep.Detail = "smallfs (" + r.bin + "; preallocate=" + r.s.prealloc.String() + ")"
	if r.c.smallfsOpts != "" {
		r.rep.Detail += ", -o " + r.c.smallfsOpts
	}
	if st.Transport != nil {
		r.rep.Detail += ", requests through " + st.Transport.Kind
	}
	last := r.dirs - r.wdirs
	steps := []func(context.Context) error{
		func(ctx context.Context) error { return r.create(ctx, "create-first", 0, r.wdirs) },
		func(ctx context.Context) error { return r.stat(ctx, "stat-first", 0) },
		func(ctx context.Context) error { return r.create(ctx, "create", r.wdirs, last) },
		func(ctx context.Context) error { return r.create(ctx, "create-last", last, r.dirs) },
		func(ctx context.Context) error { return r.stat(ctx, "stat-last", last) },
		func(ctx context.Context) error { return r.tree(ctx, "ls-lR", "ls", "-lR", r.mnt) },
		func(ctx context.Context) error { return r.tree(ctx, "find-ls", "find", r.mnt, "-ls") },
		func(ctx context.Context) error { return r.umount("umount") },
		r.remount,
		r.settle,
		func(ctx context.Context) error { return r.umount("umount-again") },
		r.fsck,
	}
	for _, step := range steps {
		if ctx.Err() != nil {
			return ErrInterrupted
		}
		if err := step(ctx); err != nil {
			if ctx.Err() != nil {
				return ErrInterrupted
			}
			return err
		}
	}
	first, lastc := r.step("create-first"), r.step("create-last")
	r.rep.Create = rateRatio(lastc.FilesPerSec(), first.FilesPerSec())
	r.rep.Stat = rateRatio(r.step("stat-last").FilesPerSec(), r.step("stat-first").FilesPerSec())
	r.rep.CreateCPU = rateRatio(lastc.cpuPerFile(), first.cpuPerFile())
	r.rep.StatCPU = rateRatio(r.step("stat-last").cpuPerFile(), r.step("stat-first").cpuPerFile())
	return nil
}

func rateRatio(a, b float64) *float64 {
	if a <= 0 || b <= 0 {
		return nil
	}
	return num(a / b)
}

func (r *scaleRun) step(name string) ScaleStep {
	for _, s := range r.rep.Steps {
		if s.Name == name {
			return s
		}
	}
	return ScaleStep{}
}

// mount mounts the image (the daemon goes to the background) and returns
// how long the command took: until the mount answers.
func (r *scaleRun) mount(ctx context.Context) (time.Duration, error) {
	t0 := time.Now()
	if _, err := command(ctx, 10*time.Minute, r.bin, r.img, r.mnt, "-o", r.opts); err != nil {
		return 0, fmt.Errorf("%w: %w", ErrTarget, err)
	}
	took := time.Since(t0)
	r.mounted = true
	st, err := r.stats()
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrTarget, err)
	}
	r.pid = st.Pid
	return took, nil
}

func (r *scaleRun) stats() (daemonStats, error) {
	t := smallfsTarget{bin: r.bin, mnt: r.mnt}
	return t.stats()
}

// daemonSample is the daemon's figures at one moment.
type daemonSample struct {
	cpu      time.Duration
	rss      int64
	heap     uint64
	gcs      uint32
	requests map[string]uint64
}

// daemonState reads the daemon's CPU and resident memory from /proc and
// its Go heap, collections and FUSE requests from `smallfs stats`.
func (r *scaleRun) daemonState() daemonSample {
	var d daemonSample
	d.cpu, _ = procCPU(r.pid)
	d.rss, _ = procRSS(r.pid)
	var st struct {
		daemonStats
		Runtime struct {
			HeapBytes uint64 `json:"heap_bytes"`
			GCs       uint32 `json:"gcs"`
		} `json:"runtime"`
	}
	out, err := command(context.Background(), 30*time.Second, r.bin, "stats", "--json", r.mnt)
	if err != nil || json.Unmarshal([]byte(out), &st) != nil {
		return d
	}
	d.heap, d.gcs = st.Runtime.HeapBytes, st.Runtime.GCs
	if layer, ok := st.Accounting.Layer("fuse"); ok {
		d.requests = map[string]uint64{}
		for _, c := range layer.Counters {
			if op, ok := strings.CutPrefix(c.Name, "op-"); ok {
				d.requests[op] = c.Value
			}
		}
	}
	return d
}

// measured runs f and records it as step name with the daemon's figures.
func (r *scaleRun) measured(name string, files int64, f func() (*time.Duration, error)) error {
	r.prog.status(name)
	a := r.daemonState()
	t0 := time.Now()
	own, err := f()
	el := time.Since(t0)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	b := r.daemonState()
	d := b.cpu - a.cpu
	step := ScaleStep{Name: name, Files: files, Elapsed: el, DaemonCPU: &d, RSS: b.rss, Heap: b.heap, GCs: b.gcs - a.gcs, CPU: own}
	for op, n := range b.requests {
		if n > a.requests[op] {
			if step.Requests == nil {
				step.Requests = map[string]uint64{}
			}
			step.Requests[op] = n - a.requests[op]
		}
	}
	r.rep.Steps = append(r.rep.Steps, step)
	return nil
}

// create makes directories [from, to) and their files from the threads,
// each taking the next directory: every other file empty, the others
// 4 KiB.
func (r *scaleRun) create(ctx context.Context, name string, from, to int) error {
	n := 0
	for d := from; d < to; d++ {
		n += r.fileCount(d)
	}
	return r.measured(name, int64(n), func() (*time.Duration, error) {
		buf := make([]byte, 4096)
		for i := range buf {
			buf[i] = byte('a' + i%26)
		}
		return nil, r.eachDir(ctx, from, to, func(dir string, d int) error {
			if err := again0(func() error { return syscall.Mkdir(dir, 0o755) }); err != nil {
				return err
			}
			for i := range r.fileCount(d) {
				path := scaleFile(dir, i)
				fd, err := again(func() (int, error) { return syscall.Open(path, createFlags, fileMode) })
				if err != nil {
					return fmt.Errorf("create %s: %w", path, err)
				}
				if i%2 == 1 {
					_, err = writeFull(fd, buf)
				}
				if cerr := syscall.Close(fd); err == nil {
					err = cerr
				}
				if err != nil {
					return fmt.Errorf("write %s: %w", path, err)
				}
			}
			return nil
		})
	})
}

// stat drops the kernel's caches, then lstats every file of the window
// of directories from d on, checking each file's size.
func (r *scaleRun) stat(ctx context.Context, name string, d int) error {
	if err := dropCaches(); err != nil {
		return err
	}
	return r.measured(name, int64(r.windowFiles(d)), func() (*time.Duration, error) {
		return nil, r.eachDir(ctx, d, d+r.wdirs, func(dir string, d int) error {
			var st syscall.Stat_t
			for i := range r.fileCount(d) {
				path := scaleFile(dir, i)
				if err := again0(func() error { return syscall.Lstat(path, &st) }); err != nil {
					return fmt.Errorf("lstat %s: %w", path, err)
				}
				if want := int64(4096 * (i % 2)); st.Size != want {
					return fmt.Errorf("%w: %s is %d bytes, want %d", ErrVerify, path, st.Size, want)
				}
			}
			return nil
		})
	})
}

// eachDir runs f on directories [from, to) from the threads.
func (r *scaleRun) eachDir(ctx context.Context, from, to int, f func(dir string, d int) error) error {
	var next atomic.Int64
	next.Store(int64(from))
	var done atomic.Int64
	stop := r.prog.track("", func() int64 { return done.Load() }, int64(to-from))
	defer stop()
	errs := make([]error, r.c.w.Threads)
	var wg sync.WaitGroup
	for t := range r.c.w.Threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				d := int(next.Add(1) - 1)
				if d >= to {
					return
				}
				if err := f(scaleDir(r.mnt, d), d); err != nil {
					errs[t] = err
					next.Store(int64(to))
					return
				}
				done.Add(1)
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return ctx.Err()
}

func scaleDir(root string, d int) string {
	return root + "/d" + pad(d, 4)
}

func scaleFile(dir string, i int) string {
	return dir + "/f" + pad(i, 4)
}

func pad(v, width int) string {
	s := strconv.Itoa(v)
	for len(s) < width {
		s = "0" + s
	}
	return s
}

// tree drops the caches, then runs a command over the whole tree, its
// output thrown away.
func (r *scaleRun) tree(ctx context.Context, name string, cmdName string, args ...string) error {
	if err := dropCaches(); err != nil {
		return err
	}
	return r.measured(name, 0, func() (*time.Duration, error) {
		cpu, _, err := runChild(ctx, cmdName, args...)
		return cpu, err
	})
}

// runChild runs a command with its output thrown away and returns its
// user+system time and peak resident memory.
func runChild(ctx context.Context, name string, args ...string) (*time.Duration, int64, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	var errOut limitedBuffer
	cmd.Stderr = &errOut
	if err := cmd.Run(); err != nil {
		return nil, 0, fmt.Errorf("%s: %w: %s", name, err, lastLine(errOut.String()))
	}
	cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	var maxRSS int64
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		maxRSS = ru.Maxrss << 10
	}
	return &cpu, maxRSS, nil
}

// limitedBuffer keeps the last 4 KiB written to it.
type limitedBuffer struct{ b []byte }

func (l *limitedBuffer) Write(p []byte) (int, error) {
	l.b = append(l.b, p...)
	if len(l.b) > 4096 {
		l.b = l.b[len(l.b)-4096:]
	}
	return len(p), nil
}

func (l *limitedBuffer) String() string { return string(l.b) }

// umount unmounts and waits for the daemon to exit, which it does once
// it has written its checkpoint and marked the image clean. The step's
// time runs until then; its daemon CPU is the last reading before the
// exit.
func (r *scaleRun) umount(name string) error {
	r.prog.status(name)
	cpu0, _ := procCPU(r.pid)
	t0 := time.Now()
	if err := unmount(r.mnt); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	r.mounted = false
	cpu1 := cpu0
	for deadline := time.Now().Add(5 * time.Minute); alive(r.pid); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: %s: daemon %d still running 5 minutes after unmount", ErrTarget, name, r.pid)
		}
		if c, err := procCPU(r.pid); err == nil {
			cpu1 = c
		}
	}
	el := time.Since(t0)
	d := cpu1 - cpu0
	r.rep.Steps = append(r.rep.Steps, ScaleStep{Name: name, Elapsed: el, DaemonCPU: &d})
	return nil
}

// remount mounts the image again: the time until the mount answers, and
// the new daemon's CPU and memory then.
func (r *scaleRun) remount(ctx context.Context) error {
	r.prog.status("mount")
	took, err := r.mount(ctx)
	if err != nil {
		return fmt.Errorf("mount: %w", err)
	}
	d := r.daemonState()
	r.rep.Steps = append(r.rep.Steps, ScaleStep{Name: "mount", Elapsed: took, DaemonCPU: &d.cpu, RSS: d.rss, Heap: d.heap, GCs: d.gcs})
	return nil
}

// scaleSettle is how long the settle step leaves the new daemon alone.
const scaleSettle = 2 * time.Second

// settle leaves the remounted daemon alone for scaleSettle and records
// its memory then: what it keeps once the load's garbage is collected.
func (r *scaleRun) settle(ctx context.Context) error {
	return r.measured("settled", 0, func() (*time.Duration, error) {
		select {
		case <-time.After(scaleSettle):
			return nil, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
}

// fsck checks the image, which must be clean: its time, CPU and peak
// memory.
func (r *scaleRun) fsck(ctx context.Context) error {
	r.prog.status("fsck")
	t0 := time.Now()
	cpu, maxRSS, err := runChild(ctx, r.bin, "fsck", r.img)
	el := time.Since(t0)
	if err != nil {
		return fmt.Errorf("%w: fsck: %w", ErrCorrupt, err)
	}
	r.rep.Steps = append(r.rep.Steps, ScaleStep{Name: "fsck", Elapsed: el, CPU: cpu, MaxRSS: maxRSS})
	return nil
}

// scaleSteps says what each step is, for the table.
var scaleSteps = map[string]string{
	"create-first": "mkdir + create the first window (every other file 4 KiB)",
	"stat-first":   "caches dropped, lstat the first window",
	"create":       "create up to the last window",
	"create-last":  "create the last window",
	"stat-last":    "caches dropped, lstat the last window",
	"ls-lR":        "caches dropped, ls -lR of everything",
	"find-ls":      "caches dropped, find -ls of everything",
	"umount":       "umount until the daemon has exited",
	"mount":        "mount until it answers (memory: the new daemon)",
	"settled":      "2 s later, nothing asked (memory: what the daemon keeps)",
	"umount-again": "umount of the remount, nothing changed",
	"fsck":         "smallfs fsck of the image",
}

// WriteTable prints the report.
func (r *ScaleReport) WriteTable(w io.Writer) error {
	fmt.Fprintf(w, "smallfs bench --scale: %d files in %d directories, windows of %d, %d threads\n", r.Files, r.Dirs, r.Window, r.Threads)
	fmt.Fprintf(w, "%s\n%s, %d CPUs, %s\n", r.Detail, r.Machine.Kernel, r.Machine.CPUs, r.Machine.Go)
	fmt.Fprintf(w, "load %s before, %s after; %s\n\n", loadString(r.LoadBefore), loadString(r.LoadAfter), r.Date.UTC().Format("2006-01-02 15:04 MST"))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "step\tfiles\ttime\tfiles/s\tdaemon CPU\tRSS after\tB/file\theap after\tB/file\t")
	for _, s := range r.Steps {
		files, fps, perFile := "", "", ""
		if s.Files > 0 {
			files = strconv.FormatInt(s.Files, 10)
			fps = fmt.Sprintf("%.0f", s.FilesPerSec())
		}
		cpu := ""
		if s.DaemonCPU != nil {
			cpu = s.DaemonCPU.Round(10 * time.Millisecond).String()
			if s.Files > 0 {
				perFile = fmt.Sprintf(" (%.1f µs/file)", float64(s.DaemonCPU.Microseconds())/float64(s.Files))
			}
		}
		rss, rssPer, heap, heapPer := "", "", "", ""
		mem := s.RSS
		if s.MaxRSS > 0 {
			mem = s.MaxRSS
		}
		if mem > 0 {
			rss = fmt.Sprintf("%.1f MB", float64(mem)/1e6)
			rssPer = fmt.Sprintf("%.0f", float64(mem)/float64(r.Files))
			if s.MaxRSS > 0 {
				rss += " max"
			}
		}
		if s.Heap > 0 {
			heap = fmt.Sprintf("%.1f MB", float64(s.Heap)/1e6)
			heapPer = fmt.Sprintf("%.0f", float64(s.Heap)/float64(r.Files))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s%s\t%s\t%s\t%s\t%s\t\n", s.Name, files, s.Elapsed.Round(time.Millisecond), fps, cpu, perFile, rss, rssPer, heap, heapPer)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	for _, s := range r.Steps {
		extra := ""
		if s.CPU != nil {
			extra = fmt.Sprintf(" (its own CPU %s)", s.CPU.Round(10*time.Millisecond))
		}
		if s.GCs > 0 {
			extra += fmt.Sprintf(", %d collections", s.GCs)
		}
		if len(s.Requests) > 0 {
			extra += "; requests " + topRequests(s.Requests, 4)
		}
		fmt.Fprintf(w, "  %-13s %s%s\n", s.Name, scaleSteps[s.Name], extra)
	}
	fmt.Fprintf(w, "\nfiles/s of the last window ÷ the first (at %d files against %d): create %s, stat %s\n", r.Files, r.Window, ratioString(r.Create), ratioString(r.Stat))
	fmt.Fprintf(w, "daemon CPU per file, last window ÷ first: create %s, stat %s\n", ratioString(r.CreateCPU), ratioString(r.StatCPU))
	if r.Error != "" {
		fmt.Fprintf(w, "FAILED: %s\n", r.Error)
	}
	_, err := fmt.Fprintf(w, "took %s\n", r.Elapsed)
	return err
}

// topRequests lists the n most frequent opcodes of reqs.
func topRequests(reqs map[string]uint64, n int) string {
	ops := slices.SortedFunc(maps.Keys(reqs), func(a, b string) int { return cmp.Or(cmp.Compare(reqs[b], reqs[a]), cmp.Compare(a, b)) })
	var parts []string
	for _, op := range ops[:min(n, len(ops))] {
		parts = append(parts, fmt.Sprintf("%s %d", op, reqs[op]))
	}
	return strings.Join(parts, ", ")
}

func loadString(l *LoadAvg) string {
	if l == nil {
		return "?"
	}
	return fmt.Sprintf("%.2f %.2f %.2f", l.Min1, l.Min5, l.Min15)
}

func ratioString(p *float64) string {
	if p == nil {
		return "n/a"
	}
	return fmt.Sprintf("%.2f×", *p)
}

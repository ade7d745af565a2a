package tests

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	sfuse "github.com/smallfs/smallfs/fs/fuse"
)

// An fsx-style exerciser (after the classic fsx of NeXT and Apple, later
// in xfstests): random pwrite, pread, ftruncate, mmap writes and reads,
// fallocate (plain, KEEP_SIZE, PUNCH_HOLE, ZERO_RANGE), O_APPEND writes,
// copy_file_range, fsync and reopen on a few files, each checked against an in-memory model, with a remount between
// phases. The operations run in a child process (the test binary again,
// with fsxDirEnv set): a page fault on a mapping of the mount is not a
// system call, so a garbage collection in the process that serves the
// mount could never stop a thread taking it.
var (
	fsxOps    = flag.Int("fsx.ops", 3000, "operations per fsx phase")
	fsxPhases = flag.Int("fsx.phases", 3, "fsx phases, with a remount between them")
	fsxSeed   = flag.Uint64("fsx.seed", 0, "fsx seed (0: a fixed default, so runs repeat)")
)

const (
	fsxDirEnv   = "SMALLFS_TEST_FSX_DIR"   // the directory on the mount
	fsxModelEnv = "SMALLFS_TEST_FSX_MODEL" // where the model lives between phases
	fsxOpsEnv   = "SMALLFS_TEST_FSX_OPS"
	fsxSeedEnv  = "SMALLFS_TEST_FSX_SEED"
	fsxFlipEnv  = "SMALLFS_TEST_FSX_FLIP" // the model drops a bit: the run must fail

	fsxFiles   = 3
	fsxMaxSize = 1 << 20
	fsxMaxLen  = 64 << 10
)

// TestFSX runs the exerciser through /dev/fuse and, where the kernel has
// FUSE over io_uring, through the rings; and checks that a model missing
// one bit is caught, so a clean run means something.
func TestFSX(t *testing.T) {
	t.Parallel()
	seed := *fsxSeed
	if seed == 0 {
		seed = 0x5eed
	}
	t.Run("devfuse", func(t *testing.T) {
		runFSX(t, newMount(t), seed, "")
	})
	t.Run("uring", func(t *testing.T) {
		enableRings(t)
		runFSX(t, newMount(t, func(c *config) { c.mount.Uring = sfuse.UringOn }), seed+1, "")
	})
	t.Run("catches", func(t *testing.T) {
		m := newMount(t)
		out, err := fsxChild(m.Dir, t.TempDir(), 200, seed, "1")
		if err == nil {
			t.Fatalf("a model missing one bit passed:\n%s", out)
		}
		if !strings.Contains(out, "differs") {
			t.Fatalf("the run failed otherwise: %v\n%s", err, out)
		}
	})
}

func runFSX(t *testing.T, m *fsMount, seed uint64, flip string) {
	model := t.TempDir()
	for phase := range *fsxPhases {
		out, err := fsxChild(m.Dir, model, *fsxOps, seed+uint64(phase)*7919, flip)
		if err != nil {
			t.Fatalf("phase %d (seed %#x): %v\n%s", phase, seed, err, out)
		}
		if out != "" {
			t.Logf("phase %d: %s", phase, out)
		}
		m.remount()
	}
	out, err := fsxChild(m.Dir, model, 0, seed, flip) // check what the last remount brought back
	if err != nil {
		t.Fatalf("after the last remount: %v\n%s", err, out)
	}
}

// fsxChild runs one phase in a child process and returns its output.
func fsxChild(dir, model string, ops int, seed uint64, flip string) (string, error) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), fsxDirEnv+"="+dir, fsxModelEnv+"="+model,
		fsxOpsEnv+"="+strconv.Itoa(ops), fsxSeedEnv+"="+strconv.FormatUint(seed, 10), fsxFlipEnv+"="+flip)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// runFSXChild is the child's main (see TestMain): it loads the model,
// checks every file against it, runs the operations, and saves the model.
func runFSXChild() int {
	ops, _ := strconv.Atoi(os.Getenv(fsxOpsEnv))
	seed, _ := strconv.ParseUint(os.Getenv(fsxSeedEnv), 10, 64)
	x := &fsx{
		dir:   os.Getenv(fsxDirEnv),
		model: os.Getenv(fsxModelEnv),
		rnd:   rand.New(rand.NewPCG(seed, seed>>1|1)),
		flip:  os.Getenv(fsxFlipEnv) != "",
	}
	if err := x.run(ops); err != nil {
		fmt.Println(err)
		for _, l := range x.log {
			fmt.Println("  ", l)
		}
		return 1
	}
	return 0
}

type fsx struct {
	dir, model string
	rnd        *rand.Rand
	flip       bool
	files      [fsxFiles]fsxFile
	log        []string // the latest operations, for the report
	op         int
	noZero     bool // the kernel does not pass FALLOC_FL_ZERO_RANGE to FUSE
}

type fsxFile struct {
	fd   int
	want []byte
}

func (x *fsx) name(i int) string { return fmt.Sprintf("f%d", i) }

func (x *fsx) run(ops int) error {
	for i := range x.files {
		f := &x.files[i]
		want, err := os.ReadFile(filepath.Join(x.model, x.name(i)))
		if err != nil && !os.IsNotExist(err) {
			return err
		}
		f.want = want
		if f.fd, err = unix.Open(filepath.Join(x.dir, x.name(i)), unix.O_RDWR|unix.O_CREAT, 0o644); err != nil {
			return err
		}
		if err := x.checkAll(i, "open"); err != nil {
			return err
		}
	}
	// A ZERO_RANGE|KEEP_SIZE past the end changes nothing where it is
	// supported; kernels before FUSE passed it answer EOPNOTSUPP.
	if err := unix.Fallocate(x.files[0].fd, unix.FALLOC_FL_ZERO_RANGE|unix.FALLOC_FL_KEEP_SIZE, 4*fsxMaxSize, 1); errors.Is(err, unix.EOPNOTSUPP) {
		x.noZero = true
		fmt.Println("FALLOC_FL_ZERO_RANGE: not passed to FUSE by this kernel, left out")
	} else if err != nil {
		return fmt.Errorf("ZERO_RANGE probe: %v", err)
	}
	for x.op = 0; x.op < ops; x.op++ {
		i := x.rnd.IntN(fsxFiles)
		if err := x.step(i); err != nil {
			return fmt.Errorf("op %d: %w", x.op, err)
		}
		if x.op%97 == 0 {
			if err := x.checkAll(i, "periodic"); err != nil {
				return fmt.Errorf("op %d: %w", x.op, err)
			}
		}
	}
	if x.flip { // a model that loses a bit: the checks must see it
		for i := range x.files {
			if f := &x.files[i]; len(f.want) > 0 {
				f.want[len(f.want)/2] ^= 1
				break
			}
		}
	}
	for i := range x.files {
		if err := x.checkAll(i, "end"); err != nil {
			return err
		}
		if err := unix.Close(x.files[i].fd); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(x.model, x.name(i)), x.files[i].want, 0o644); err != nil {
			return err
		}
	}
	return nil
}

func (x *fsx) note(format string, args ...any) {
	x.log = append(x.log, fmt.Sprintf("%d: ", x.op)+fmt.Sprintf(format, args...))
	if len(x.log) > 20 {
		x.log = x.log[1:]
	}
}

// span picks an offset and length, mostly inside or near the file.
func (x *fsx) span(size int) (int, int) {
	n := 1 + x.rnd.IntN(fsxMaxLen)
	if x.rnd.IntN(4) == 0 {
		n = 1 + x.rnd.IntN(512) // small, unaligned
	}
	off := x.rnd.IntN(max(size, 1) + fsxMaxLen/4)
	off = min(off, fsxMaxSize-n)
	return off, n
}

func (x *fsx) data(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(x.rnd.Uint32())
	}
	return b
}

// put writes b at off in the model, growing it with zeros.
func (f *fsxFile) put(off int, b []byte) {
	if end := off + len(b); end > len(f.want) {
		f.want = append(f.want, make([]byte, end-len(f.want))...)
	}
	copy(f.want[off:], b)
}

// zero zeroes [off, off+n) in the model, growing it to cover the range
// unless keep.
func (f *fsxFile) zero(off, n int, keep bool) {
	if end := off + n; !keep && end > len(f.want) {
		f.resize(end)
	}
	if off < len(f.want) {
		clear(f.want[off:min(off+n, len(f.want))])
	}
}

func (f *fsxFile) resize(size int) {
	if size <= len(f.want) {
		f.want = f.want[:size]
		return
	}
	f.want = append(f.want, make([]byte, size-len(f.want))...)
}

func (x *fsx) step(i int) error {
	f := &x.files[i]
	size := len(f.want)
	switch op := x.rnd.IntN(22); {
	case op < 6: // pwrite
		off, n := x.span(size)
		b := x.data(n)
		x.note("%s pwrite %d+%d", x.name(i), off, n)
		if w, err := unix.Pwrite(f.fd, b, int64(off)); err != nil || w != n {
			return fmt.Errorf("pwrite %d+%d: %d %v", off, n, w, err)
		}
		f.put(off, b)
	case op < 10: // pread
		off, n := x.span(size)
		x.note("%s pread %d+%d", x.name(i), off, n)
		return x.check(i, off, n)
	case op < 12: // ftruncate
		s := x.rnd.IntN(fsxMaxSize / 2)
		if x.rnd.IntN(3) == 0 {
			s = size / 2
		}
		x.note("%s ftruncate %d", x.name(i), s)
		if err := unix.Ftruncate(f.fd, int64(s)); err != nil {
			return fmt.Errorf("ftruncate %d: %v", s, err)
		}
		f.resize(s)
	case op < 13: // mmap write
		if size == 0 {
			return nil
		}
		off, n := x.span(size)
		off, n = min(off, size-1), min(n, size-min(off, size-1))
		b := x.data(n)
		x.note("%s mmap write %d+%d", x.name(i), off, n)
		if err := x.mapped(f.fd, off, n, true, func(m []byte) { copy(m, b) }); err != nil {
			return err
		}
		f.put(off, b)
	case op < 14: // mmap read
		if size == 0 {
			return nil
		}
		off, n := x.span(size)
		off, n = min(off, size-1), min(n, size-min(off, size-1))
		x.note("%s mmap read %d+%d", x.name(i), off, n)
		var got []byte
		if err := x.mapped(f.fd, off, n, false, func(m []byte) { got = bytes.Clone(m) }); err != nil {
			return err
		}
		return x.compare(i, "mmap read", off, got, f.want[off:off+n])
	case op < 15: // fallocate, extending or not
		off, n := x.span(size)
		mode := uint32(0)
		if x.rnd.IntN(2) == 0 {
			mode = unix.FALLOC_FL_KEEP_SIZE
		}
		x.note("%s fallocate mode %d %d+%d", x.name(i), mode, off, n)
		if err := unix.Fallocate(f.fd, mode, int64(off), int64(n)); err != nil {
			return fmt.Errorf("fallocate %d+%d: %v", off, n, err)
		}
		if mode == 0 && off+n > size {
			f.resize(off + n)
		}
	case op < 16: // punch a hole
		off, n := x.span(size)
		x.note("%s punch hole %d+%d", x.name(i), off, n)
		if err := unix.Fallocate(f.fd, unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, int64(off), int64(n)); err != nil {
			return fmt.Errorf("punch hole %d+%d: %v", off, n, err)
		}
		f.zero(off, n, true)
	case op < 17: // zero range, extending or not
		if x.noZero {
			return nil
		}
		off, n := x.span(size)
		mode, keep := uint32(unix.FALLOC_FL_ZERO_RANGE), x.rnd.IntN(2) == 0
		if keep {
			mode |= unix.FALLOC_FL_KEEP_SIZE
		}
		x.note("%s zero range keep-size=%v %d+%d", x.name(i), keep, off, n)
		if err := unix.Fallocate(f.fd, mode, int64(off), int64(n)); err != nil {
			return fmt.Errorf("zero range %d+%d: %v", off, n, err)
		}
		f.zero(off, n, keep)
	case op < 18: // O_APPEND write through a second descriptor
		_, n := x.span(size)
		n = min(n, fsxMaxSize-size)
		b := x.data(n)
		x.note("%s append %d", x.name(i), n)
		fd, err := unix.Open(filepath.Join(x.dir, x.name(i)), unix.O_WRONLY|unix.O_APPEND, 0)
		if err != nil {
			return err
		}
		w, err := unix.Write(fd, b)
		unix.Close(fd)
		if err != nil || w != n {
			return fmt.Errorf("append %d: %d %v", n, w, err)
		}
		f.put(size, b)
	case op < 19: // copy_file_range from another file
		j := (i + 1 + x.rnd.IntN(fsxFiles-1)) % fsxFiles
		src := &x.files[j]
		roff, n := x.span(len(src.want))
		woff, _ := x.span(size)
		n = min(n, fsxMaxSize-woff)
		want := max(0, min(n, len(src.want)-roff))
		x.note("%s copy_file_range from %s %d+%d to %d", x.name(i), x.name(j), roff, n, woff)
		r, w := int64(roff), int64(woff)
		got, err := unix.CopyFileRange(src.fd, &r, f.fd, &w, n, 0)
		if err != nil || got != want {
			return fmt.Errorf("copy_file_range %d+%d to %d: %d (want %d) %v", roff, n, woff, got, want, err)
		}
		if want > 0 {
			f.put(woff, bytes.Clone(src.want[roff:roff+want]))
		}
	case op < 20:
		x.note("%s fsync", x.name(i))
		return unix.Fsync(f.fd)
	default: // reopen
		x.note("%s reopen", x.name(i))
		if err := unix.Close(f.fd); err != nil {
			return err
		}
		fd, err := unix.Open(filepath.Join(x.dir, x.name(i)), unix.O_RDWR, 0)
		if err != nil {
			return err
		}
		f.fd = fd
	}
	return nil
}

// mapped maps the pages holding [off, off+n) of fd, passes fn that range,
// and unmaps them (with an msync after writes, half of the time).
func (x *fsx) mapped(fd, off, n int, write bool, fn func([]byte)) error {
	page := os.Getpagesize()
	base := off / page * page
	prot := unix.PROT_READ
	if write {
		prot |= unix.PROT_WRITE
	}
	m, err := unix.Mmap(fd, int64(base), off+n-base, prot, unix.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("mmap %d+%d: %v", off, n, err)
	}
	fn(m[off-base:])
	if write && x.rnd.IntN(2) == 0 {
		if err := unix.Msync(m, unix.MS_SYNC); err != nil {
			unix.Munmap(m)
			return fmt.Errorf("msync: %v", err)
		}
	}
	return unix.Munmap(m)
}

// check reads [off, off+n) and compares it with the model.
func (x *fsx) check(i, off, n int) error {
	f := &x.files[i]
	b := make([]byte, n)
	got, err := unix.Pread(f.fd, b, int64(off))
	if err != nil {
		return fmt.Errorf("pread %d+%d: %v", off, n, err)
	}
	want := f.want[min(off, len(f.want)):min(off+n, len(f.want))]
	return x.compare(i, "pread", off, b[:got], want)
}

// checkAll compares the file's size and whole content with the model.
func (x *fsx) checkAll(i int, when string) error {
	f := &x.files[i]
	var st unix.Stat_t
	if err := unix.Fstat(f.fd, &st); err != nil {
		return err
	}
	if st.Size != int64(len(f.want)) {
		return fmt.Errorf("%s: %s size %d, model %d", when, x.name(i), st.Size, len(f.want))
	}
	return x.check(i, 0, len(f.want)+1)
}

func (x *fsx) compare(i int, what string, off int, got, want []byte) error {
	if bytes.Equal(got, want) {
		return nil
	}
	if len(got) != len(want) {
		return fmt.Errorf("%s %s at %d: %d bytes, model %d: the file differs", x.name(i), what, off, len(got), len(want))
	}
	at := 0
	for got[at] == want[at] {
		at++
	}
	return fmt.Errorf("%s %s at %d: the file differs from byte %d: %#x, model %#x", x.name(i), what, off, off+at, got[at], want[at])
}

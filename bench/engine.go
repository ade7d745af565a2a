package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Run is a Workload set up in a directory, ready to run the steps of
// Sequence in order with Do.
type Run struct {
	w       Workload
	root    string
	threads []*thread
	// noXattrs is set once the filesystem refused setxattr; getxattr is
	// then not supported either.
	noXattrs bool
	stop     atomic.Bool
}

// Result is one step's figures over all threads.
type Result struct {
	Op      string
	Files   int64 // files done over all threads
	Bytes   int64 // file bytes written or read
	Elapsed time.Duration
}

// FilesPerSec is the rate smallfile reports: files over the time from the
// common start to the end of the last thread.
func (r Result) FilesPerSec() float64 { return rate(float64(r.Files), r.Elapsed) }

// MBPerSec is bytes moved per second, in 10^6 bytes.
func (r Result) MBPerSec() float64 { return rate(float64(r.Bytes)/1e6, r.Elapsed) }

func rate(n float64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return n / d.Seconds()
}

// Prepare validates w (after filling its defaults), builds every path and
// makes the directory tree under root, which must exist and be empty.
func Prepare(root string, w Workload) (*Run, error) {
	w = w.withDefaults()
	if err := w.validate(); err != nil {
		return nil, err
	}
	names, err := readNames(root)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrTarget, err)
	}
	if len(names) > 0 {
		return nil, fmt.Errorf("%w: %s is not empty", ErrUsage, root)
	}
	r := &Run{w: w, root: root}
	for id := range w.Threads {
		t := newThread(id, w, newLayout(root, id, w), &r.stop)
		if err := t.l.prepareDirs(); err != nil {
			return nil, err
		}
		r.threads = append(r.threads, t)
	}
	return r, nil
}

// Workload is the run's workload, defaults filled.
func (r *Run) Workload() Workload { return r.w }

// Done is the number of files the current step has finished over all
// threads; it may be read while Do runs, for progress.
func (r *Run) Done() int64 {
	var n int64
	for _, t := range r.threads {
		n += t.done.Load()
	}
	return n
}

// Do runs one step: every thread waits at a barrier, the clock starts when
// they are released, and the step's time is the end of the slowest thread.
// A step the filesystem does not support returns ErrUnsupported and
// changes nothing; any other error leaves the tree as the failure left it.
// A Cold step first drops the kernel's caches, off the clock; where that
// is not permitted (not root) the step is ErrUnsupported.
// Cancelling ctx stops the threads between files with ErrInterrupted.
func (r *Run) Do(ctx context.Context, op Op) (Result, error) {
	res := Result{Op: op.Name}
	if op.Xattr && r.noXattrs {
		return res, fmt.Errorf("%s: %w", op.Name, ErrUnsupported)
	}
	if ctx.Err() != nil {
		// AfterFunc would set stop from a goroutine of its own, maybe
		// after the threads have started.
		r.stop.Store(true)
		return res, ErrInterrupted
	}
	if op.Cold {
		// Before the threads start: sync and the drop are not timed.
		if err := dropCaches(); err != nil {
			return res, fmt.Errorf("%s: %w", op.Name, err)
		}
	}
	stopWatch := context.AfterFunc(ctx, func() { r.stop.Store(true) })
	defer stopWatch()

	var ready, finished sync.WaitGroup
	start := make(chan struct{})
	ends := make([]time.Time, len(r.threads))
	errs := make([]error, len(r.threads))
	for i, t := range r.threads {
		t.reset()
		ready.Add(1)
		finished.Add(1)
		go func() {
			defer finished.Done()
			ready.Done()
			<-start
			errs[i] = op.run(t)
			ends[i] = time.Now()
			if errs[i] != nil {
				r.stop.Store(true) // the step failed: do not let the others run on
			}
		}()
	}
	ready.Wait()
	t0 := time.Now()
	close(start)
	finished.Wait()

	for i, t := range r.threads {
		res.Files += t.files
		res.Bytes += t.bytes
		res.Elapsed = max(res.Elapsed, ends[i].Sub(t0))
	}
	if err := firstError(errs); err != nil {
		if op.Xattr && errors.Is(err, ErrUnsupported) {
			r.noXattrs = true
		}
		return res, err
	}
	if ctx.Err() != nil {
		return res, ErrInterrupted
	}
	return res, nil
}

// firstError prefers a real failure to the interruptions it caused in the
// other threads.
func firstError(errs []error) error {
	var first error
	for _, err := range errs {
		if err != nil && !errors.Is(err, ErrInterrupted) {
			return err
		}
		if first == nil {
			first = err
		}
	}
	return first
}

// thread is one worker's state: its paths and buffers, reused for every
// file so the timed loops do not allocate.
type thread struct {
	w    Workload
	l    *layout
	id   int
	buf  []byte // what create writes to file i, after stamp(i)
	rbuf []byte
	xval []byte
	xbuf []byte
	stop *atomic.Bool

	files, bytes int64
	done         atomic.Int64
	_            [64]byte // keep the threads' counters on separate cache lines
}

func newThread(id int, w Workload, l *layout, stop *atomic.Bool) *thread {
	t := &thread{w: w, l: l, id: id, stop: stop,
		buf:  make([]byte, w.Size),
		rbuf: make([]byte, w.Size),
		xval: make([]byte, w.XattrSize),
		xbuf: make([]byte, w.XattrSize+1),
	}
	for i := range t.buf {
		t.buf[i] = byte('a' + (i+id)%26)
	}
	for i := range t.xval {
		t.xval[i] = byte('A' + i%26)
	}
	return t
}

func (t *thread) reset() {
	t.files, t.bytes = 0, 0
	t.done.Store(0)
}

// pattern returns the contents of file i: the thread's fill with the file
// index stamped at the start, so a file's bytes are its own.
func (t *thread) pattern(i int) []byte {
	v := uint64(t.id)<<32 | uint64(i)
	for k := 0; k < 8 && k < len(t.buf); k++ {
		t.buf[k] = byte(v >> (8 * k))
	}
	return t.buf
}

// each runs f for every file index, stopping at the first error.
func (t *thread) each(name string, f fileFunc) error {
	for i := range t.w.Files {
		if err := t.stopped(); err != nil {
			return err
		}
		n, err := f(t, i)
		if err != nil {
			return fmt.Errorf("%s %s: %w", name, t.l.files[i], err)
		}
		t.count(n)
	}
	return nil
}

func (t *thread) count(bytes int64) {
	t.files++
	t.bytes += bytes
	t.done.Add(1)
}

func (t *thread) stopped() error {
	if t.stop.Load() {
		return ErrInterrupted
	}
	return nil
}

// writeFile opens path with flags, writes file i's pattern, fsyncs if
// asked, and closes; close errors count (a filesystem reports ENOSPC there).
func (t *thread) writeFile(path string, flags, i int, fsync bool) (int64, error) {
	fd, err := again(func() (int, error) { return syscall.Open(path, flags, fileMode) })
	if err != nil {
		return 0, err
	}
	n, err := writeFull(fd, t.pattern(i))
	if err == nil && fsync {
		err = again0(func() error { return syscall.Fsync(fd) })
	}
	if cerr := syscall.Close(fd); err == nil {
		err = cerr
	}
	return int64(n), err
}

// writeFull writes b in records of at most recordSize bytes.
func writeFull(fd int, b []byte) (int, error) {
	done := 0
	for done < len(b) {
		chunk := b[done:min(len(b), done+recordSize)]
		n, err := again(func() (int, error) { return syscall.Write(fd, chunk) })
		if err != nil {
			return done, err
		}
		if n == 0 {
			return done, fmt.Errorf("write returned 0 of %d bytes: %w", len(chunk), syscall.EIO)
		}
		done += n
	}
	return done, nil
}

// readFull fills b in records of at most recordSize bytes, stopping early
// at end of file.
func readFull(fd int, b []byte) (int, error) {
	done := 0
	for done < len(b) {
		n, err := again(func() (int, error) { return syscall.Read(fd, b[done:min(len(b), done+recordSize)]) })
		if err != nil {
			return done, err
		}
		if n == 0 {
			break
		}
		done += n
	}
	return done, nil
}

// again retries a system call interrupted by a signal (a FUSE request the
// kernel interrupted can come back EINTR), as package os does.
func again(call func() (int, error)) (int, error) {
	for {
		n, err := call()
		if !errors.Is(err, syscall.EINTR) {
			return n, err
		}
	}
}

func again0(call func() error) error {
	_, err := again(func() (int, error) { return 0, call() })
	return err
}

package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// coldRead is one read of a whole tree.
type coldRead struct {
	Files   int64
	Bytes   int64
	Elapsed time.Duration
}

// readTree reads the target's tree as tar cf does, caches dropped first:
// each directory's names in the order readdir gives them, each entry
// lstat'ed, each directory entered as it is met, each file opened, read
// whole in records of recordSize and closed, on one thread. Every file's
// bytes and size are checked against what the churn wrote (the check is
// a memory compare per record, inside the clock); a file missing, extra,
// short or changed is ErrVerify.
func (s *ageState) readTree(ctx context.Context) (coldRead, error) {
	if err := dropCaches(); err != nil {
		return coldRead{}, err
	}
	want := s.live()
	dirOf := make(map[string]int32, len(s.dirs))
	for i, d := range s.dirs {
		dirOf[d] = int32(i)
	}
	r := &treeReader{s: s, ctx: ctx, dirOf: dirOf, buf: make([]byte, recordSize)}
	t0 := time.Now()
	err := r.dir(s.root, "")
	res := coldRead{Files: r.files, Bytes: r.bytes, Elapsed: time.Since(t0)}
	if err == nil && r.files != int64(want) {
		err = fmt.Errorf("%w: read %d files, the churn left %d", ErrVerify, r.files, want)
	}
	return res, err
}

type treeReader struct {
	s            *ageState
	ctx          context.Context
	dirOf        map[string]int32
	buf          []byte
	st           syscall.Stat_t
	files, bytes int64
}

func (r *treeReader) dir(path, rel string) error {
	if err := r.ctx.Err(); err != nil {
		return ErrInterrupted
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrTarget, err)
	}
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		return fmt.Errorf("%w: readdir %s: %w", ErrTarget, path, err)
	}
	for _, name := range names {
		p := path + "/" + name
		if err := again0(func() error { return syscall.Lstat(p, &r.st) }); err != nil {
			return fmt.Errorf("%w: lstat %s: %w", ErrTarget, p, err)
		}
		switch r.st.Mode & syscall.S_IFMT {
		case syscall.S_IFDIR:
			sub := name
			if rel != "" {
				sub = rel + "/" + name
			}
			if err := r.dir(p, sub); err != nil {
				return err
			}
		case syscall.S_IFREG:
			if err := r.file(p, rel, name); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%w: %s: not a file nor a directory the churn made", ErrVerify, p)
		}
	}
	return nil
}

func (r *treeReader) file(p, rel, name string) error {
	s := r.s
	id, err := strconv.ParseInt(strings.TrimPrefix(name, "f"), 10, 32)
	d, known := r.dirOf[rel]
	if err != nil || !strings.HasPrefix(name, "f") || !known || int(id) >= len(s.dir) || s.dir[id] != d {
		return fmt.Errorf("%w: %s: a file the churn did not leave there", ErrVerify, p)
	}
	fd, err := again(func() (int, error) { return syscall.Open(p, syscall.O_RDONLY|syscall.O_CLOEXEC, 0) })
	if err != nil {
		return fmt.Errorf("%w: open %s: %w", ErrTarget, p, err)
	}
	var off int64
	for {
		n, err := again(func() (int, error) { return syscall.Read(fd, r.buf) })
		if err != nil {
			syscall.Close(fd)
			return fmt.Errorf("%w: read %s: %w", ErrTarget, p, err)
		}
		if n == 0 {
			break
		}
		if off+int64(n) > s.size[id] || !bytes.Equal(r.buf[:n], ageBytes(s.base[id], off, n)) {
			syscall.Close(fd)
			return fmt.Errorf("%w: %s: bytes %d-%d differ from those written", ErrVerify, p, off, off+int64(n))
		}
		off += int64(n)
	}
	syscall.Close(fd)
	if off != s.size[id] {
		return fmt.Errorf("%w: %s: %d bytes, write(2) took %d", ErrVerify, p, off, s.size[id])
	}
	r.files++
	r.bytes += off
	return nil
}

// copyTree writes the tree s describes into root, directory after
// directory in the order the model made them, each directory's files in
// the order they were created, with the same sizes and bytes: a fresh copy
// of the aged tree. It returns the copy's state.
func (s *ageState) copyTree(ctx context.Context, root string) (*ageState, error) {
	c := newAgeState(root, s.dirs)
	byDir := make([][]int32, len(s.dirs))
	for id, d := range s.dir {
		if d >= 0 {
			byDir[d] = append(byDir[d], int32(id))
		}
	}
	for d := range s.ndirs {
		if ctx.Err() != nil {
			return nil, ErrInterrupted
		}
		if err := c.apply(ageOp{kind: ageMkdir, dir: int32(d)}); err != nil {
			return nil, err
		}
		for _, id := range byDir[d] {
			if err := c.apply(ageOp{kind: ageCreate, id: id, dir: int32(d), size: s.size[id], base: s.base[id]}); err != nil {
				return nil, err
			}
		}
	}
	if c.enospc > 0 {
		return c, fmt.Errorf("%w (%d writes of the fresh copy met ENOSPC)", errFull, c.enospc)
	}
	return c, nil
}

// errFull is a measurement the full device did not let run: reported,
// not a failure.
var errFull = errors.New("the device is full")

// ageBatch is writes under age: a batch of new files into new directories
// (the bench's create step), then an append to each (its append step),
// then the batch removed, untimed.
type ageBatch struct {
	Create, Append Result
}

func runBatch(ctx context.Context, root string, files int) (ageBatch, error) {
	var b ageBatch
	dir := filepath.Join(root, "age-batch")
	err := mkdirFresh(dir)
	var run *Run
	if err == nil {
		run, err = Prepare(dir, Workload{Threads: 2, Files: max(files/2, 1), Size: 4096, FilesPerDir: 100, XattrSize: 16})
	}
	if err != nil {
		return b, batchFull(dir, err)
	}
	ops := Sequence()
	find := func(name string) Op {
		return ops[slices.IndexFunc(ops, func(o Op) bool { return o.Name == name })]
	}
	if b.Create, err = run.Do(ctx, find("create")); err == nil {
		b.Append, err = run.Do(ctx, find("append"))
	}
	if err == nil {
		_, err = run.Do(ctx, find("cleanup"))
	}
	if errors.Is(err, syscall.ENOSPC) {
		return b, batchFull(dir, err)
	}
	if err == nil {
		err = os.Remove(dir)
	}
	if err != nil && !errors.Is(err, ErrInterrupted) {
		err = fmt.Errorf("writes under age: %w", err)
	}
	return b, err
}

// batchFull removes what a batch the full device refused left, and says
// so: ENOSPC is errFull, other errors stay what they are.
func batchFull(dir string, err error) error {
	if !errors.Is(err, syscall.ENOSPC) {
		return err
	}
	if rerr := os.RemoveAll(dir); rerr != nil {
		return fmt.Errorf("%w: removing the batch: %w", ErrTarget, rerr)
	}
	return fmt.Errorf("writes under age: %w (%w)", errFull, err)
}

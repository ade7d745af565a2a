package bench

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"syscall"
)

// agePattern is what every file's bytes come from: byte p of a file whose
// contents start at base is agePattern[(base+p) % agePatternLen], so a
// file's bytes are its own and an append continues them.
const agePatternLen = 1 << 20

var agePattern = func() []byte {
	b := make([]byte, agePatternLen+recordSize)
	rng := rand.New(rand.NewPCG(19, 2026))
	for i := range b[:agePatternLen] {
		b[i] = byte(rng.Uint32())
	}
	copy(b[agePatternLen:], b)
	return b
}()

// ageBytes is n bytes (at most recordSize) of a file's contents from
// offset off.
func ageBytes(base uint32, off int64, n int) []byte {
	s := int((int64(base) + off) % agePatternLen)
	return agePattern[s : s+n]
}

// ageState is one target's tree as the churn left it: where each file is
// and how many bytes write(2) took for it. It follows the model except
// where the device was full: a write cut short keeps the bytes that were
// written, a create or rename refused leaves the file absent or where it
// was.
type ageState struct {
	root  string
	dirs  []string // the model's
	dir   []int32  // by file id; -1 absent
	size  []int64
	base  []uint32
	made  []bool // by directory: made (a full device can refuse a mkdir)
	ndirs int    // directories the model made
	// enospc counts the operations the full device cut short or refused;
	// skipped those of files a refused create left absent.
	enospc, skipped int64
	ops             int64
}

func newAgeState(root string, dirs []string) *ageState { return &ageState{root: root, dirs: dirs} }

func (s *ageState) path(id int32) string {
	return filepath.Join(s.root, s.dirs[s.dir[id]], ageFileName(id))
}

// live is the number of files the target should hold.
func (s *ageState) live() int {
	n := 0
	for _, d := range s.dir {
		if d >= 0 {
			n++
		}
	}
	return n
}

// apply does op on the target. ENOSPC is counted and the state follows
// what the filesystem did; any other error fails the run.
func (s *ageState) apply(op ageOp) error {
	s.ops++
	for int(op.id) >= len(s.dir) {
		s.dir = append(s.dir, -1)
		s.size = append(s.size, 0)
		s.base = append(s.base, 0)
	}
	switch op.kind {
	case ageMkdir:
		for len(s.made) <= int(op.dir) {
			s.made = append(s.made, false)
		}
		s.ndirs = max(s.ndirs, int(op.dir)+1)
		_, err := s.mkdir(op.dir)
		return err
	case ageCreate:
		if ok, err := s.mkdir(op.dir); !ok {
			return err
		}
		s.dir[op.id], s.base[op.id], s.size[op.id] = op.dir, op.base, 0
		return s.write(op, createFlags)
	case ageRewrite:
		if s.dir[op.id] < 0 {
			s.skipped++
			return nil
		}
		s.base[op.id], s.size[op.id] = op.base, 0
		return s.write(op, syscall.O_WRONLY|syscall.O_TRUNC|syscall.O_CLOEXEC)
	case ageAppend:
		if s.dir[op.id] < 0 {
			s.skipped++
			return nil
		}
		return s.write(op, syscall.O_WRONLY|syscall.O_APPEND|syscall.O_CLOEXEC)
	case ageRename:
		if s.dir[op.id] < 0 {
			s.skipped++
			return nil
		}
		if ok, err := s.mkdir(op.dir); !ok {
			return err
		}
		from := s.path(op.id)
		to := filepath.Join(s.root, s.dirs[op.dir], ageFileName(op.id))
		err := again0(func() error { return syscall.Rename(from, to) })
		switch {
		case err == nil:
			s.dir[op.id] = op.dir
		case errors.Is(err, syscall.ENOSPC):
			s.enospc++
		default:
			return fmt.Errorf("%w: rename %s: %w", ErrTarget, from, err)
		}
		return nil
	case ageDelete:
		if s.dir[op.id] < 0 {
			s.skipped++
			return nil
		}
		p := s.path(op.id)
		if err := again0(func() error { return syscall.Unlink(p) }); err != nil {
			return fmt.Errorf("%w: unlink %s: %w", ErrTarget, p, err)
		}
		s.dir[op.id] = -1
		return nil
	}
	return fmt.Errorf("age: unknown operation %d", op.kind)
}

// mkdir makes directory d (and its parent) unless made already; a full
// device refuses it (counted), and it is tried again before the next
// file goes there. It tells whether the directory exists.
func (s *ageState) mkdir(d int32) (bool, error) {
	if s.made[d] {
		return true, nil
	}
	p := filepath.Join(s.root, s.dirs[d])
	for _, dir := range []string{filepath.Dir(p), p} {
		err := again0(func() error { return syscall.Mkdir(dir, 0o755) })
		switch {
		case err == nil, errors.Is(err, syscall.EEXIST):
		case errors.Is(err, syscall.ENOSPC):
			s.enospc++
			return false, nil
		default:
			return false, fmt.Errorf("%w: mkdir %s: %w", ErrTarget, dir, err)
		}
	}
	s.made[d] = true
	return true, nil
}

// write opens file op.id with flags and writes op.size bytes of its
// contents from its current size on, recording what write(2) took.
func (s *ageState) write(op ageOp, flags int) error {
	p := s.path(op.id)
	fd, err := again(func() (int, error) { return syscall.Open(p, flags, fileMode) })
	if errors.Is(err, syscall.ENOSPC) && flags&syscall.O_CREAT != 0 {
		s.enospc++
		s.dir[op.id] = -1
		return nil
	}
	if err != nil {
		return fmt.Errorf("%w: open %s: %w", ErrTarget, p, err)
	}
	full := false
	for left := op.size; left > 0; {
		chunk := ageBytes(s.base[op.id], s.size[op.id], int(min(left, recordSize)))
		n, err := again(func() (int, error) { return syscall.Write(fd, chunk) })
		if n > 0 {
			s.size[op.id] += int64(n)
			left -= int64(n)
		}
		if errors.Is(err, syscall.ENOSPC) {
			full = true
			break
		}
		if err != nil {
			syscall.Close(fd)
			return fmt.Errorf("%w: write %s: %w", ErrTarget, p, err)
		}
		if n == 0 {
			syscall.Close(fd)
			return fmt.Errorf("%w: write %s returned 0", ErrTarget, p)
		}
	}
	if full {
		s.enospc++
	}
	// close(2) reports no write-back error on these filesystems (ENOSPC
	// comes from write); one here still fails the run.
	if err := syscall.Close(fd); err != nil && !errors.Is(err, syscall.ENOSPC) {
		return fmt.Errorf("%w: close %s: %w", ErrTarget, p, err)
	} else if err != nil {
		s.enospc++
	}
	return nil
}

package volume

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/smallfs/smallfs/alloc"
)

// TestReadPlanPinsBlocks forces the interleaving of a spliced read: the
// plan's device range is read only after its file's write-back freed
// those blocks, their commit made them allocatable, and another file's
// write-back was placed where they were (a directory made on the freed
// inode number of the old one starts at the same home). The range must
// still hold the file's bytes until the plan is done.

// spliced makes the volumes of these tests: without block checksums,
// whose reads are verified in the handler and never planned as device
// ranges, so a read plan pins blocks only there.
var spliced = MkfsOptions{NoBlockSums: true}

func TestReadPlanPinsBlocks(t *testing.T) {
	v := newTestVolumeSizeMkfs(t, 64<<20, Options{}, spliced)
	const size = 16 << 10
	old, other := pattern(size, 1), pattern(size, 2)
	d := must[Attr](t)(v.Mkdir(root, RootIno, "d", 0o755))
	a := writeFile(t, v, d.Ino, "a", old)

	h := must[*Handle](t)(v.OpenFile(a, syscall.O_RDWR))
	p := must[ReadPlan](t)(h.ReadPlan(0, make([]byte, size)))
	if p.Bytes != nil || p.Len != size {
		t.Fatalf("plan of a committed extent: %d bytes in memory, device length %d", len(p.Bytes), p.Len)
	}
	// The plan's reader is descheduled here. A write-back of the same file
	// replaces the blocks, and a commit makes their frees durable.
	must[int](t)(h.WriteAt(pattern(size, 3), 0))
	ok(t, h.Release())
	ok(t, v.Rename(root, d.Ino, "a", RootIno, "a", 0))
	ok(t, v.Rmdir(root, RootIno, "d"))
	ok(t, v.durableFrees())
	e := must[Attr](t)(v.Mkdir(root, RootIno, "e", 0o755))
	if e.Ino != d.Ino {
		t.Fatalf("directory e got inode %d, want d's %d (same home region)", e.Ino, d.Ino)
	}
	writeFile(t, v, e.Ino, "b", other)

	got := make([]byte, size)
	if _, err := v.dev.ReadAt(got, p.DevOff); err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(got, other) {
		t.Fatalf("the plan's device range holds another file's bytes: b was placed on a's freed blocks while a read of them was pending")
	}
	if !bytes.Equal(got, old) {
		t.Fatalf("the plan's device range no longer holds the file's bytes")
	}
	if n := v.PinnedReads(); n != 1 {
		t.Fatalf("%d reads pinned before Done, want 1", n)
	}
	p.Done()
	p.Done() // a second Done of the same plan is a no-op
	if n := v.PinnedReads(); n != 0 {
		t.Fatalf("%d reads pinned after Done, want 0", n)
	}
	// Done lets the blocks go: a directory at the same home again places
	// its first file on them.
	ok(t, v.Unlink(root, e.Ino, "b"))
	ok(t, v.Rmdir(root, RootIno, "e"))
	f := must[Attr](t)(v.Mkdir(root, RootIno, "f", 0o755))
	c := writeFile(t, v, f.Ino, "c", other)
	hc := must[*Handle](t)(v.OpenFile(c, syscall.O_RDONLY))
	defer hc.Release()
	pc := must[ReadPlan](t)(hc.ReadPlan(0, make([]byte, size)))
	defer pc.Done()
	if pc.DevOff != p.DevOff {
		t.Errorf("after Done, a file at the same home placed at byte %d, want the freed range at %d", pc.DevOff, p.DevOff)
	}
}

// TestReadGateModel drives the gate with random pins, dones and durable
// commits, stale pins among them (the epoch loaded before a flip, the
// slot counted after it), against what it must hold: a commit's frees
// become allocatable only once every read pinned before the commit was
// durable is done, and once no read is pinned nothing durable waits.
func TestReadGateModel(t *testing.T) {
	for seed := range int64(20) {
		r := rand.New(rand.NewPCG(uint64(seed), 0))
		s, err := newSpace(1<<12, 0, nil, 4096)
		ok(t, err)
		type read struct {
			pin    readPin
			loaded bool // stale: the epoch is loaded, the slot not yet counted
		}
		var reads []*read
		// blockers[seq]: reads pinned when seq was made durable.
		blockers := map[uint64]map[*read]bool{}
		freed := map[uint64]alloc.Extent{}
		var seq uint64
		for step := range 300 {
			switch op := r.IntN(10); {
			case op < 3:
				reads = append(reads, &read{pin: s.pinRead(Ino(r.IntN(3)))})
			case op < 4: // a stale pin: load now, count later
				e := s.gate.epoch.Load() & 1
				reads = append(reads, &read{pin: readPin(uint64(r.IntN(3))<<1 | e), loaded: true})
			case op < 7 && len(reads) > 0:
				i := r.IntN(len(reads))
				rd := reads[i]
				if rd.loaded { // it counts itself, then reads the map
					s.gate.stripes[rd.pin>>1].n[rd.pin&1].Add(1)
					rd.loaded = false
					continue
				}
				reads = slices.Delete(reads, i, i+1)
				for _, b := range blockers {
					delete(b, rd)
				}
				s.unpinRead(rd.pin)
			default:
				var held uint64 = 1
				s.reserved++
				e, err := s.alloc(0, 1, &held)
				ok(t, err)
				seq++
				ok(t, s.freeAfter(e, seq))
				freed[seq] = e
				b := map[*read]bool{}
				for _, rd := range reads {
					if !rd.loaded {
						b[rd] = true
					}
				}
				blockers[seq] = b
				s.durable(seq)
			}
			s.mu.Lock()
			waiting := map[uint64]bool{}
			for _, p := range s.pending {
				waiting[p.seq] = true
			}
			s.mu.Unlock()
			counted := 0
			for _, rd := range reads {
				if !rd.loaded {
					counted++
				}
			}
			for q, e := range freed {
				if !waiting[q] && len(blockers[q]) > 0 {
					t.Fatalf("seed %d step %d: the frees of %d (%v) are allocatable while %d reads pinned before them are not done",
						seed, step, q, e, len(blockers[q]))
				}
				if waiting[q] && counted == 0 {
					t.Fatalf("seed %d step %d: no read pinned, and the frees of %d still wait", seed, step, q)
				}
				if !waiting[q] {
					delete(freed, q)
					delete(blockers, q)
				}
			}
		}
	}
}

// TestPinnedReadStallsNoCommit: a read that is never done holds back the
// blocks freed after it, and nothing else: commits, checkpoints and writes
// go on, and the blocks come back at its Done.
func TestPinnedReadStallsNoCommit(t *testing.T) {
	v := newTestVolumeSizeMkfs(t, 64<<20, Options{}, spliced)
	const size = 64 << 10
	a := writeFile(t, v, RootIno, "a", pattern(size, 1))
	ha := must[*Handle](t)(v.OpenFile(a, syscall.O_RDONLY))
	p := must[ReadPlan](t)(ha.ReadPlan(0, make([]byte, size)))
	ok(t, ha.Release())
	ok(t, v.Unlink(root, RootIno, "a"))
	for i := range 20 {
		writeFile(t, v, RootIno, "b", pattern(size, byte(i)))
		ok(t, v.Sync())
	}
	ok(t, v.durableFrees())
	v.mu.Lock()
	ok(t, v.checkpoint(false))
	v.mu.Unlock()
	if !v.space.hasPending() {
		t.Fatal("nothing waits behind a read that is not done")
	}
	before := v.AllocStats().FreeBlocks
	p.Done()
	if v.space.hasPending() {
		t.Error("frees still wait after the last read was done")
	}
	if after := v.AllocStats().FreeBlocks; after <= before {
		t.Errorf("free blocks %d after Done, %d before: nothing came back", after, before)
	}
}

// TestPinnedReadsConcurrent: readers plan reads and hand the plans to a
// replier that reads their device ranges late (as a transport writes its
// replies), while a writer rewrites the files and commits on a volume so
// small that write-backs soon come back to blocks freed before: every
// range read holds its own file's bytes, and the writer never runs out
// of space for long.
func TestPinnedReadsConcurrent(t *testing.T) {
	v := newTestVolumeSizeMkfs(t, 1<<20, Options{}, spliced)
	const files, size = 8, 8 << 10
	stamp := func(i, version int) []byte {
		b := make([]byte, size)
		for k := 0; k < size; k += 8 {
			binary.LittleEndian.PutUint32(b[k:], uint32(i))
			binary.LittleEndian.PutUint32(b[k+4:], uint32(version))
		}
		return b
	}
	inos := make([]Ino, files)
	for i := range inos {
		inos[i] = writeFile(t, v, RootIno, "f"+strconv.Itoa(i), stamp(i, 0))
	}
	type reply struct {
		file int
		plan ReadPlan
	}
	replies := make(chan reply, 8)
	errs := make(chan error, 4)
	var readers, others sync.WaitGroup
	others.Go(func() { // the replier
		buf := make([]byte, size)
		failed := false
		for r := range replies {
			if r.plan.Len > 0 && !failed {
				_, err := v.dev.ReadAt(buf[:r.plan.Len], r.plan.DevOff)
				if got := binary.LittleEndian.Uint32(buf); err == nil && got != uint32(r.file) {
					err = fmt.Errorf("a read of file %d found file %d's bytes", r.file, got)
				}
				if err != nil {
					errs <- err
					failed = true
				}
			}
			r.plan.Done()
		}
	})
	others.Go(func() { // the writer
		for version := 1; version <= 300; version++ {
			i := version % files
			h, err := v.OpenFile(inos[i], syscall.O_WRONLY)
			if err == nil {
				_, err = h.WriteAt(stamp(i, version), 0)
				err = errors.Join(err, h.Release(), v.settleFrees())
			}
			if err != nil {
				errs <- err
				return
			}
		}
	})
	for r := range 2 {
		readers.Go(func() {
			for k := range 1500 {
				i := (k + r) % files
				h, err := v.OpenFile(inos[i], syscall.O_RDONLY)
				if err != nil {
					errs <- err
					return
				}
				p, err := h.ReadPlan(0, make([]byte, size))
				if err = errors.Join(err, h.Release()); err != nil {
					errs <- err
					return
				}
				replies <- reply{i, p}
			}
		})
	}
	readers.Wait()
	close(replies)
	others.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestWriteWaitsForPinnedReads: on a full volume, a write that needs the
// blocks a delete freed waits for the read pinned before the delete, and
// gets them once it is done; a read that stays pinned leaves the write
// its ENOSPC after readWait instead of holding it.
func TestWriteWaitsForPinnedReads(t *testing.T) {
	v := newTestVolumeSizeMkfs(t, 1<<20, Options{}, spliced)
	data := pattern(100<<10, 1)
	var news [2]Ino // made first: a new name needs room too
	for i := range news {
		news[i] = writeFile(t, v, RootIno, "new"+strconv.Itoa(i), nil)
	}
	var err error
	for i := 0; err == nil; i++ {
		var h *Handle
		_, h, err = v.Create(root, RootIno, "fill"+strconv.Itoa(i), 0o644, syscall.O_WRONLY)
		ok(t, err)
		_, err = h.WriteAt(data, 0)
		ok(t, h.Release())
	}
	wantErrno(t, err, syscall.ENOSPC)
	pinFreed := func(name string) ReadPlan {
		t.Helper()
		a := must[Attr](t)(v.Lookup(root, RootIno, name))
		h := must[*Handle](t)(v.OpenFile(a.Ino, syscall.O_RDONLY))
		p := must[ReadPlan](t)(h.ReadPlan(0, make([]byte, len(data))))
		ok(t, h.Release())
		ok(t, v.Unlink(root, RootIno, name))
		ok(t, v.durableFrees())
		return p
	}
	write := func(i int) error {
		h := must[*Handle](t)(v.OpenFile(news[i], syscall.O_WRONLY))
		_, err := h.WriteAt(data, 0)
		return errors.Join(err, h.Release())
	}

	p := pinFreed("fill0")
	done := make(chan struct{})
	go func() { // the reply is written while the write waits
		defer close(done)
		for {
			v.space.mu.Lock()
			waiting := v.space.gate.wake != nil
			v.space.mu.Unlock()
			if waiting {
				break
			}
			runtime.Gosched()
		}
		p.Done()
	}()
	ok(t, write(0))
	<-done

	defer func(d time.Duration) { readWait = d }(readWait)
	readWait = time.Millisecond
	p = pinFreed("fill1")
	wantErrno(t, write(1), syscall.ENOSPC)
	must[Attr](t)(v.SetAttr(root, news[1], SetAttrIn{Valid: SetSize}))
	p.Done()
	ok(t, write(1))
}

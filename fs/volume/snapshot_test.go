package volume

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"syscall"
	"testing"

	"github.com/smallfs/smallfs/accounting"
	"github.com/smallfs/smallfs/fs/device"
	"github.com/smallfs/smallfs/fs/format"
)

// TestSnapshotCheckpoint: the periodic checkpoint holds the metadata as
// it was at its start, byte for byte, although random changes (the model
// test's operations) ran between every two slices of its encoding: the
// slices are 3 inode slots or records here, so changes land before,
// inside and behind the encoding, also in the middle of a directory's
// entries. Once it is current, a crash recovers what the model holds:
// the log replays over it.
func TestSnapshotCheckpoint(t *testing.T) {
	for seed := range *modelSeeds {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			c := device.NewCrash(16<<20, int64(seed))
			ok(t, Mkfs(c, MkfsOptions{LogSize: 1 << 20}))
			v, err := Open(c, Options{CommitInterval: -1})
			ok(t, err)
			r := &modelRun{t: t, rng: rand.New(rand.NewPCG(uint64(seed), 7)), v: v, m: newModel()}
			r.durable()
			for range 60 {
				r.step()
			}
			saved := 0
			for round := range 4 {
				var want format.RecordBuffer
				v.mu.RLock()
				ok(t, v.records(&want, nil))
				v.mu.RUnlock()
				enc, err := v.encodeSnapshot(3, r.step)
				ok(t, err)
				if enc == nil {
					t.Fatalf("round %d: the snapshot was cancelled", round)
				}
				saved += enc.saved
				if got := enc.buf.Bytes(); !bytes.Equal(got, want.Bytes()) {
					v.ckptMu.Unlock()
					t.Fatalf("round %d: the snapshot (%d bytes) is not the metadata at its start (%d bytes)", round, len(got), want.Len())
				}
				ok(t, v.writeSnapshot(enc))
				r.compare(v, fmt.Sprintf("round %d", round))
				ok(t, v.Sync())
				r.durable()
				r.crash(c, device.DropUnflushed)
			}
			if saved == 0 {
				t.Error("no change saved anything for a snapshot: the test changed nothing it had not encoded")
			}
			t.Logf("%d inodes and directories saved over 4 snapshots", saved)
			closeAndCheck(t, v, mustCrashImage(t, c), Options{CommitInterval: -1})
		})
	}
}

// TestSnapshotInPlaceChanges: changes that rewrite an inode's state in
// place (an xattr value replaced, an xattr removed, data rewritten,
// entries removed and added again in the directory being encoded) made
// after a snapshot started leave it as it was at its start.
func TestSnapshotInPlaceChanges(t *testing.T) {
	v := newTestVolume(t, Options{CommitInterval: -1})
	d := must[Attr](t)(v.Mkdir(root, RootIno, "d", 0o755)).Ino
	var files []Ino
	for i := range 40 {
		a, h := must2(t)(v.Create(root, d, fmt.Sprintf("f%02d", i), 0o644, syscall.O_RDWR))
		must[int](t)(h.WriteAt(pattern(5000, byte(i)), 0))
		ok(t, h.Release())
		ok(t, v.SetXattr(a.Ino, "user.a", []byte("first"), 0))
		ok(t, v.SetXattr(a.Ino, "user.b", []byte("second"), 0))
		files = append(files, a.Ino)
	}
	ok(t, v.Sync())
	var want format.RecordBuffer
	v.mu.RLock()
	ok(t, v.records(&want, nil))
	v.mu.RUnlock()
	// Change everything twice: once inside the inode pass, once inside
	// d's entries.
	inInodes, inEntries := false, false
	enc, err := v.encodeSnapshot(5, func() {
		s := v.snap // between runs on the encoding goroutine
		switch {
		case !inInodes && s.inodesDone > RootIno && s.inodesDone < files[10]:
			inInodes = true
		case !inEntries && s.dirsDone == d && s.cookie > 0:
			inEntries = true
		default:
			return
		}
		for i, ino := range files {
			ok(t, v.SetXattr(ino, "user.a", []byte("changed"), 0))
			if inEntries { // the second time: user.b is gone
				ok(t, v.SetXattr(ino, "user.b", []byte("back"), 0))
			} else {
				ok(t, v.RemoveXattr(ino, "user.b"))
			}
			h := must[*Handle](t)(v.OpenFile(ino, syscall.O_RDWR))
			must[int](t)(h.WriteAt(pattern(3000, byte(i+100)), 1000))
			ok(t, h.Release())
			name := fmt.Sprintf("f%02d", i)
			ok(t, v.Rename(root, d, name, d, name+"x", 0))
			ok(t, v.Rename(root, d, name+"x", d, name, 0))
		}
		ok(t, v.Sync())
	})
	ok(t, err)
	if enc == nil {
		t.Fatal("the snapshot was cancelled")
	}
	if !inInodes || !inEntries {
		v.ckptMu.Unlock()
		t.Fatalf("changes inside the inode pass %v, inside the entries %v", inInodes, inEntries)
	}
	if !bytes.Equal(enc.buf.Bytes(), want.Bytes()) {
		v.ckptMu.Unlock()
		t.Fatalf("the snapshot (%d bytes, %d saved) is not the metadata at its start (%d bytes)", enc.buf.Len(), enc.saved, want.Len())
	}
	ok(t, v.writeSnapshot(enc))
}

// TestSnapshotCancelled: a checkpoint under the write lock (a full log,
// Close) cancels a snapshot being encoded, which then writes nothing;
// the figures count both, and the snapshot's buffer, accounted while it
// was encoded, is given back.
func TestSnapshotCancelled(t *testing.T) {
	reg := accounting.NewRegistry()
	v := newTestVolume(t, Options{Accounting: reg})
	var last Ino
	for i := range 50 {
		last = must[Attr](t)(v.Mknod(root, RootIno, fmt.Sprint("f", i), 0o644, 0)).Ino
	}
	layer := func() accounting.LayerStat { l, _ := reg.Snapshot().Layer("fs"); return l }
	counter := func(name string) uint64 { c, _ := layer().Counter(name); return c.Value }
	buffer := func() int64 { b, _ := layer().Type("checkpoint_buffer"); return b.Bytes }
	before := counter("checkpoint")
	slices, sawBuffer := 0, false
	enc, err := v.encodeSnapshot(4, func() {
		if slices++; slices == 3 {
			sawBuffer = buffer() > 0
			ok(t, v.SetXattr(last, "user.x", []byte("y"), 0)) // not reached yet: saved
			v.mu.Lock()
			ok(t, v.checkpoint(false))
			v.mu.Unlock()
		}
	})
	ok(t, err)
	if enc != nil {
		v.ckptMu.Unlock()
		t.Fatal("a snapshot went on after a checkpoint under the lock")
	}
	if counter("checkpoint_saved") != 1 {
		t.Errorf("checkpoint_saved %d, want 1", counter("checkpoint_saved"))
	}
	if !sawBuffer || buffer() != 0 {
		t.Errorf("checkpoint_buffer: held while encoding %v, %d bytes after", sawBuffer, buffer())
	}
	if got := counter("checkpoint") - before; got != 1 || counter("checkpoint_locked") != 1 || counter("checkpoint_cancelled") != 1 {
		t.Errorf("checkpoints %d (want 1), locked %d, cancelled %d (want 1 each)", got, counter("checkpoint_locked"), counter("checkpoint_cancelled"))
	}
	ok(t, v.checkpointConcurrent())
	if counter("checkpoint") != before+2 || counter("checkpoint_locked") != 1 || buffer() != 0 {
		t.Errorf("after a snapshot: checkpoints +%d, locked %d, buffer %d bytes", counter("checkpoint")-before, counter("checkpoint_locked"), buffer())
	}
}

// TestSnapshotUnderLoad runs periodic checkpoints, in slices of a few
// records, while two goroutines create, rewrite, label and remove files
// and directories; then a crash after the last commit recovers exactly
// the volume's tree. With -race it also checks the locking.
func TestSnapshotUnderLoad(t *testing.T) {
	c := device.NewCrash(64<<20, 1)
	ok(t, Mkfs(c, MkfsOptions{LogSize: 4 << 20}))
	v, err := Open(c, Options{CommitInterval: -1})
	ok(t, err)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 2 {
		top := must[Attr](t)(v.Mkdir(root, RootIno, fmt.Sprint("w", w), 0o755)).Ino
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 5))
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				name := fmt.Sprint("f", rng.IntN(60))
				switch rng.IntN(5) {
				case 0, 1:
					a, h, err := v.Create(root, top, name, 0o644, syscall.O_RDWR)
					if err != nil {
						t.Errorf("create %s: %v", name, err)
						return
					}
					_, err = h.WriteAt(pattern(rng.IntN(9000), byte(i)), 0)
					ok(t, errors.Join(err, h.Release()))
					ok(t, v.SetXattr(a.Ino, "user.i", []byte(fmt.Sprint(i)), 0))
				case 2:
					if err := v.Unlink(root, top, name); err != nil && !errors.Is(err, syscall.ENOENT) {
						t.Errorf("unlink %s: %v", name, err)
					}
				case 3:
					if _, err := v.Mkdir(root, top, "d"+name, 0o755); err != nil && !errors.Is(err, syscall.EEXIST) {
						t.Errorf("mkdir d%s: %v", name, err)
					}
				case 4:
					if err := v.Rmdir(root, top, "d"+name); err != nil && !errors.Is(err, syscall.ENOENT) {
						t.Errorf("rmdir d%s: %v", name, err)
					}
				}
			}
		}()
	}
	for range 20 {
		ok(t, v.snapshotCheckpoint(7, nil))
	}
	close(stop)
	wg.Wait()
	ok(t, v.Sync())
	want, err := volumeDump(v)
	ok(t, err)
	img, err := c.Crash(device.DropUnflushed)
	ok(t, err)
	v2, err := Open(img, Options{CommitInterval: -1})
	ok(t, err)
	checkOK(t, v2, img, "after crash")
	got, err := volumeDump(v2)
	ok(t, err)
	if got != want {
		t.Errorf("after a crash the tree differs\nrecovered:\n%s\nbefore:\n%s", got, want)
	}
	ok(t, v2.Close())
	closeAndCheck(t, v, mustCrashImage(t, c), Options{CommitInterval: -1})
}

// TestCheckpointKick: once commits fill the log halfway, the committer is
// asked for a checkpoint at once (a snapshot), rather than at its next
// tick, by which time a burst may have filled the log.
func TestCheckpointKick(t *testing.T) {
	dev := device.NewMem(64 << 20)
	ok(t, Mkfs(dev, MkfsOptions{LogSize: 256 << 10}))
	v, err := Open(dev, Options{CommitInterval: -1}) // no committer: the kick stays queued
	ok(t, err)
	for i := 0; len(v.ckptKick) == 0; i++ {
		if used, capacity := v.j.Usage(); used*4 >= capacity*3 {
			t.Fatalf("log %d of %d blocks used after %d files, no checkpoint asked for", used, capacity, i)
		}
		must[Attr](t)(v.Mknod(root, RootIno, fmt.Sprint("f", i), 0o644, 0))
	}
	if used, capacity := v.j.Usage(); used*2 < capacity {
		t.Errorf("a checkpoint asked for with the log %d of %d blocks used", used, capacity)
	}
	ok(t, v.checkpointConcurrent())
	<-v.ckptKick
	for i := range 200 {
		must[Attr](t)(v.Mknod(root, RootIno, fmt.Sprint("g", i), 0o644, 0))
	}
	if len(v.ckptKick) != 0 {
		t.Error("a checkpoint asked for again right after one")
	}
	closeAndCheck(t, v, dev, Options{CommitInterval: -1})
}

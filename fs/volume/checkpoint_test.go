package volume

import (
	"bytes"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/smallfs/smallfs/fs/device"
)

// TestConcurrentCheckpoint runs periodic checkpoints while another
// goroutine creates, writes and deletes files, then crashes the device in
// every mode: each image opens, passes Check, and holds every file synced
// before the crash byte for byte.
func TestConcurrentCheckpoint(t *testing.T) {
	c := device.NewCrash(32<<20, 3)
	ok(t, Mkfs(c, MkfsOptions{}))
	v := must[*Volume](t)(Open(c, Options{CommitInterval: -1, InlineThreshold: -1}))
	data := func(i int) []byte { return pattern(5000+i%3*4096, byte(i)) }

	var wg sync.WaitGroup
	stop := make(chan struct{})
	var opErr error
	var made atomic.Int64
	var failed atomic.Bool
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			name := "f" + strconv.Itoa(i)
			_, h, err := v.Create(root, RootIno, name, 0o644, syscall.O_RDWR)
			if err == nil {
				_, err = h.WriteAt(data(i), 0)
				if rerr := h.Release(); err == nil {
					err = rerr
				}
			}
			if err == nil && i%4 == 3 {
				err = v.Unlink(root, RootIno, "f"+strconv.Itoa(i-1))
			}
			if err != nil {
				opErr = err
				failed.Store(true)
				return
			}
			made.Add(1)
		}
	}()
	// Checkpoint until the worker has made 40 files and at least 5 times,
	// whatever the machine's speed.
	for i := 0; i < 5 || made.Load() < 40 && !failed.Load(); i++ {
		ok(t, v.checkpointConcurrent())
	}
	close(stop)
	wg.Wait()
	ok(t, opErr)
	ok(t, v.Sync())
	want := map[string][]byte{}
	ok(t, v.ReadDir(RootIno, 0, 0, func(e DirEntry) bool {
		i, _ := strconv.Atoi(e.Name[1:])
		want[e.Name] = data(i)
		return true
	}))
	for _, mode := range device.CrashModes {
		img := must[*device.Mem](t)(c.Crash(mode))
		r := must[*Volume](t)(Open(img, Options{CommitInterval: -1}))
		checkOK(t, r, img, "after crash "+mode.String())
		for name, d := range want {
			a := must[Attr](t)(r.Lookup(root, RootIno, name))
			if !bytes.Equal(readFile(t, r, a.Ino), d) {
				t.Fatalf("%v: %s differs", mode, name)
			}
		}
		ok(t, r.Close())
	}
	checkOK(t, v, must[*device.Mem](t)(c.Crash(device.KeepUnflushed)), "at the end")
	ok(t, v.Close())
}

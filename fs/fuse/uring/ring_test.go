package uring

import (
	"errors"
	"syscall"
	"testing"
)

// TestWaitFlags waits on a real ring, with the flags a FUSE queue waits
// with, for a no-op's completion: a flag the kernel does not know would
// fail the enter with EINVAL.
func TestWaitFlags(t *testing.T) {
	if got := waitFlags(0); got != enterGetEvents {
		t.Errorf("waitFlags without the feature = %#x", got)
	}
	if got := waitFlags(featNoIOWait); got != enterGetEvents|enterNoIOWait {
		t.Errorf("waitFlags with the feature = %#x", got)
	}
	r, err := newRing(4)
	if errors.Is(err, syscall.ENOSYS) || errors.Is(err, syscall.EPERM) {
		t.Skipf("io_uring unavailable here: %v", err) // seccomp or kernel.io_uring_disabled
	}
	if err != nil {
		t.Fatal(err)
	}
	defer r.close()
	t.Logf("wait flags %#x", r.waitFlags)
	const opNop, tag = 0, 0x5eed
	r.mu.Lock()
	r.push(func(sqe []byte) {
		sqe[0] = opNop
		for i := range 8 {
			sqe[32+i] = byte(uint64(tag) >> (8 * i)) // user_data
		}
	})
	n := r.takeUnsubmitted()
	r.mu.Unlock()
	if err := r.enter(n, true); err != nil {
		t.Fatalf("wait with flags %#x: %v", r.waitFlags, err)
	}
	if got := r.reap(nil); len(got) != 1 || got[0].userData != tag || got[0].res != 0 {
		t.Fatalf("completions %+v", got)
	}
}

package journal

import (
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"

	"github.com/smallfs/smallfs/fs/device"
)

// TestGroupCommitSharesFlushes holds the first commit inside its first
// flush until every other caller is waiting for it; the waiters must then
// be served by one more commit: 4 flushes for 8 callers, whatever the
// scheduling.
func TestGroupCommitSharesFlushes(t *testing.T) {
	const callers = 8
	f := device.NewFaulty(device.NewMem(1 << 20))
	j := mustOpen(t, f, testOpts(256))
	release := make(chan struct{})
	f.SetHook(func(op device.Op, n int64) error {
		if op == device.OpFlush && n == 1 {
			<-release
		}
		return nil
	})
	rng := rand.New(rand.NewPCG(8, 8))
	first := mustAppend(t, j, testTxn(1, rng, 0))
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	wg.Add(1)
	go func() { defer wg.Done(); errs <- j.Sync(first) }()
	// Wait until the leader is inside its flush.
	for f.Count(device.OpFlush) == 0 {
		runtime.Gosched()
	}
	for i := uint64(2); i <= callers; i++ {
		seq := mustAppend(t, j, testTxn(i, rng, 0))
		wg.Add(1)
		go func() { defer wg.Done(); errs <- j.Sync(seq) }()
	}
	for {
		j.mu.Lock()
		w := j.waiting
		j.mu.Unlock()
		if w == callers-1 {
			break
		}
		runtime.Gosched()
	}
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := f.Count(device.OpFlush); got != 4 {
		t.Fatalf("%d flushes for %d callers, want 4 (two commits)", got, callers)
	}
	if j.Durable() != callers {
		t.Fatalf("durable %d", j.Durable())
	}
}

// TestConcurrentAppendSync hammers Append and Sync from many goroutines;
// every transaction must be replayed exactly once, in sequence order.
func TestConcurrentAppendSync(t *testing.T) {
	dev := device.NewMem(4 << 20)
	opts := testOpts(4096)
	j := mustOpen(t, dev, opts)
	var wg sync.WaitGroup
	var mu sync.Mutex
	bySeq := map[uint64]bool{}
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				// The volume appends under its own lock with content it
				// derives from the sequence; emulate that with j's order.
				mu.Lock()
				seq := j.Last() + 1
				got, err := j.Append(testTxn(seq, rand.New(rand.NewPCG(uint64(g), uint64(i))), 3))
				mu.Unlock()
				if err != nil || got != seq {
					t.Errorf("append: %d %v", got, err)
					return
				}
				if err := j.Sync(got); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				bySeq[got] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	seqs, _, next := replayAll(t, dev, opts)
	if len(seqs) != 400 || next != 401 || len(bySeq) != 400 {
		t.Fatalf("replayed %d, next %d, synced %d", len(seqs), next, len(bySeq))
	}
	expectRun(t, seqs, 1)
}

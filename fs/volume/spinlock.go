package volume

import (
	"runtime"
	"sync"
	"time"
)

// spinRWMutex is the metadata lock: a sync.RWMutex whose Lock and RLock,
// when the lock is taken, first retry for up to spinWait while the process
// runs Go code on more than one CPU, and only then sleep.
//
// Why: the lock is held for a few microseconds at a time, but a goroutine
// that sleeps on a sync.RWMutex is woken through the scheduler, and a
// request handler of FUSE over io_uring is locked to its queue's thread
// and CPU, so its wake-up is a thread wake-up on another CPU: tens of
// microseconds on this VM, more than the holds it waits for
// (docs/PERFORMANCE.md, "The metadata lock"). With one P there is nobody to spin
// against (the holder cannot run while the spinner does), so it sleeps at
// once.
type spinRWMutex struct{ sync.RWMutex }

// spinWait bounds a spin: several of the lock's usual holds, well below a
// sleep and wake-up's cost.
const spinWait = 20 * time.Microsecond

func (m *spinRWMutex) Lock() {
	if !m.TryLock() && !spin(m.TryLock) {
		m.RWMutex.Lock()
	}
}

func (m *spinRWMutex) RLock() {
	if !m.TryRLock() && !spin(m.TryRLock) {
		m.RWMutex.RLock()
	}
}

// spin retries try until it succeeds or spinWait has passed, and reports
// whether it succeeded. It gives up at once with a single P.
func spin(try func() bool) bool {
	if runtime.GOMAXPROCS(0) < 2 {
		return false
	}
	start := time.Now()
	for {
		for range 50 { // about a quarter of a microsecond between tries
			spinPause()
		}
		if try() {
			return true
		}
		if time.Since(start) > spinWait {
			return false
		}
	}
}

// spinPause is a few nanoseconds of waiting: a call the compiler keeps.
//
//go:noinline
func spinPause() {}

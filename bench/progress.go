package bench

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// progress rewrites one status line on a terminal; elsewhere (a pipe, a
// file, a test) it prints nothing.
type progress struct {
	w  io.Writer
	on bool
	mu sync.Mutex
}

func newProgress(w io.Writer) *progress {
	f, ok := w.(*os.File)
	if !ok {
		return &progress{w: w}
	}
	fi, err := f.Stat()
	return &progress{w: w, on: err == nil && fi.Mode()&os.ModeCharDevice != 0}
}

func (p *progress) status(line string) {
	if !p.on {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, "\r\033[K%s", line)
}

// track shows label with done()/total every fifth of a second until the
// returned stop is called.
func (p *progress) track(label string, done func() int64, total int64) (stop func()) {
	if !p.on {
		return func() {}
	}
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			p.status(fmt.Sprintf("%s  %d/%d", label, done(), total))
			select {
			case <-quit:
				return
			case <-tick.C:
			}
		}
	}()
	return func() { close(quit); wg.Wait() }
}

// clear removes the status line before the report is printed.
func (p *progress) clear() { p.status("") }

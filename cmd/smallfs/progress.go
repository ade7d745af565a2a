package main

import (
	"fmt"
	"io"
	"os"
	"time"
)

// progress reports how far a long job has come. Done and total are in
// the job's own units (bytes read, inodes checked).
type progress func(what string, done, total uint64)

// progress returns a reporter that redraws one line on stderr at most
// ten times a second when stderr is a terminal, and does nothing otherwise
// (logs and pipes get no carriage-return noise).
func (a *app) progress() progress {
	f, ok := a.stderr.(*os.File)
	if !ok || !isTerminal(f) {
		return func(string, uint64, uint64) {}
	}
	var last time.Time
	return func(what string, done, total uint64) {
		if now := time.Now(); done < total && now.Sub(last) < 100*time.Millisecond {
			return
		} else {
			last = now
		}
		drawProgress(f, what, done, total)
	}
}

func drawProgress(w io.Writer, what string, done, total uint64) {
	pct := 100.0
	if total > 0 {
		pct = 100 * float64(done) / float64(total)
	}
	end := ""
	if done >= total {
		end = "\n"
	}
	fmt.Fprintf(w, "\r%s: %5.1f%%%s", what, pct, end)
}

// isTerminal reports whether f is a character device, as a terminal is.
func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// Package cputime measures the CPU time of the process for benchmarks.
//
// On a shared machine the wall-clock ns/op of a benchmark includes the
// time it waits for a core that other work holds; CPU time does not, so it
// is the steadier figure to compare. It covers every goroutine (in
// RunParallel, all of them together) and garbage collection.
//
// Use it as the first line of a benchmark, after any setup:
//
//	defer cputime.PerOp(b)()
//
// which reports "cpu-ns/op" beside ns/op when the benchmark ends.
package cputime

import (
	"syscall"
	"testing"
	"time"
)

// Process returns the user plus system CPU time the process has used so
// far, or 0 if getrusage fails (it cannot with RUSAGE_SELF on Linux).
func Process() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// PerOp starts a measurement; the func it returns reports the CPU time
// since then divided by b.N as the metric "cpu-ns/op".
func PerOp(b *testing.B) func() {
	start := Process()
	return func() { b.ReportMetric(float64(Process()-start)/float64(b.N), "cpu-ns/op") }
}

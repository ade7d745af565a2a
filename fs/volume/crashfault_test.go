package volume

import (
	"bytes"
	"fmt"
	"maps"
	"math/rand/v2"
	"syscall"
	"testing"

	"github.com/smallfs/smallfs/fs/device"
)

// Generated workloads with device faults: each one-operation workload of
// the crash workloads (crashgen_test.go) runs again with the device
// failing its Nth read, write or flush (EIO, or ENOSPC for a write), for
// every N the workload reaches. The workload stops at the first call that
// fails; then the device loses power. Whatever the fault hit:
//
//   - a fault that fired reaches a caller: some call of the workload
//     fails (a write or flush of data or metadata is never taken for
//     done);
//   - what the persistence points that returned promised is there after
//     the power cut, the volume opens and checks, and no file holds
//     another file's bytes.
//
// The suite runs a fixed sample of the cases; -crashgen.all runs them all.

// faultCase is one workload with one fault.
type faultCase struct {
	ops   []gop
	p     persist
	op    device.Op
	n     int64 // the Nth operation of kind op after Open
	errno syscall.Errno
}

func (fc faultCase) name() string {
	return fmt.Sprintf("%s/%s-%d-%s", workloadName(fc.ops, fc.p), fc.op, fc.n, fc.errno.Error())
}

// countIO runs ops and p with nothing failing and returns how many reads,
// writes and flushes they cause after Open.
func countIO(t *testing.T, base []byte, m0 *crashModel, ops []gop, p persist) [3]int64 {
	f := device.NewFaulty(device.NewCrashFrom(bytes.Clone(base), 1))
	v := must[*Volume](t)(Open(f, Options{CommitInterval: -1}))
	var at [3]int64
	for i := range at {
		at[i] = f.Count(device.Op(i))
	}
	r := &crashRun{v: v, model: m0.clone()}
	for _, op := range ops {
		op.model(r.model)
		ok(t, op.run(r))
	}
	ok(t, r.persist(p))
	var n [3]int64
	for i := range n {
		n[i] = f.Count(device.Op(i)) - at[i]
	}
	ok(t, r.release())
	ok(t, v.Close())
	return n
}

// runFaultCase runs one case and returns what it breaks.
func runFaultCase(t *testing.T, base []byte, m0 *crashModel, fc faultCase) []string {
	c := device.NewCrashFrom(bytes.Clone(base), 1)
	f := device.NewFaulty(c)
	v := must[*Volume](t)(Open(f, Options{CommitInterval: -1}))
	target := f.Count(fc.op) + fc.n
	f.FailNth(fc.op, target, fc.errno)
	m := m0.clone()
	promises := []*promise{{point: 0, p: persist{name: "setup", kind: "commit"}, model: m0.clone(), paths: map[string]bool{}, objects: map[int]bool{}}}
	r := &crashRun{v: v, model: m}
	failed := false
	for _, op := range fc.ops {
		before := map[int]bool{}
		for _, q := range op.touches {
			if o := m.obj(q); o != nil {
				before[o.id] = true
			}
		}
		op.model(m)
		err := op.run(r)
		for _, q := range op.touches { // done or not, the operation touched these
			promises[0].paths[q] = true
			if o := m.obj(q); o != nil {
				promises[0].objects[o.id] = true
			}
		}
		maps.Copy(promises[0].objects, before)
		if err != nil {
			failed = true
			break
		}
	}
	if !failed {
		if err := r.persist(fc.p); err != nil {
			failed = true
		} else {
			promises = append(promises, &promise{p: fc.p, model: m.clone(), paths: map[string]bool{}, objects: map[int]bool{}})
		}
	}
	var out []string
	if f.Count(fc.op) >= target && !failed {
		out = append(out, "the fault fired and no call failed")
	}
	for _, mode := range []device.CrashMode{device.DropUnflushed, device.KeepUnflushed} {
		img := must[*device.Mem](t)(c.Crash(mode))
		for _, why := range checkCrashState(img, m, promises) {
			out = append(out, fmt.Sprintf("power cut (%s): %s", mode, why))
		}
	}
	r.release()
	v.Close()
	return out
}

// TestCrashWorkloadsWithFaults runs the workloads with device faults (see
// above).
func TestCrashWorkloadsWithFaults(t *testing.T) {
	t.Parallel()
	base, m0 := crashSetup(t)
	var cases []faultCase
	for _, op := range crashOps() {
		if !op.valid(m0) {
			continue
		}
		next := m0.clone()
		op.model(next)
		for _, p := range persists(next, op) {
			seq := []gop{op}
			n := countIO(t, base, m0, seq, p)
			for kind, count := range n {
				for i := int64(1); i <= count; i++ {
					cases = append(cases, faultCase{ops: seq, p: p, op: device.Op(kind), n: i, errno: syscall.EIO})
					if device.Op(kind) == device.OpWrite {
						cases = append(cases, faultCase{ops: seq, p: p, op: device.Op(kind), n: i, errno: syscall.ENOSPC})
					}
				}
			}
		}
	}
	if !*crashgenAll {
		rng := rand.New(rand.NewPCG(3, 0))
		rng.Shuffle(len(cases), func(i, j int) { cases[i], cases[j] = cases[j], cases[i] })
		cases = cases[:min(len(cases), faultSample)]
	}
	violations := 0
	for _, fc := range cases {
		t.Run(fc.name(), func(t *testing.T) {
			for _, why := range runFaultCase(t, base, m0, fc) {
				violations++
				t.Error(why)
			}
		})
	}
	t.Logf("%d workloads with a fault, %d violations", len(cases), violations)
}

// faultSample is how many cases the suite runs, drawn with a fixed seed.
const faultSample = 60

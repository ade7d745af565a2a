package journal

import (
	"math/rand/v2"
	"testing"

	"github.com/smallfs/smallfs/fs/device"
)

// TestCrashGivesSyncedPrefix runs a random append/sync/checkpoint workload
// on a crash device, then for every flush point and crash mode replays the
// image: the result must be a run of transactions from the checkpoint that
// includes every one synced by then. A new run then appends on the crashed
// image and crashes again: replay must give the recovered run plus the new
// transactions, never a stale chunk of the abandoned history.
//
// With DataSums (commit marks) it also shows that no crash, first or
// second, passes for damage before the end of the log (ErrLogDamaged):
// the second life's stale chunks of the first are a later lap's
// neighbours with another nonce.
func TestCrashGivesSyncedPrefix(t *testing.T) {
	for _, sums := range []bool{false, true} {
		t.Run(map[bool]string{false: "two-flushes", true: "data-sums"}[sums], func(t *testing.T) { crashGivesSyncedPrefix(t, sums) })
	}
}

func crashGivesSyncedPrefix(t *testing.T, sums bool) {
	for seed := range int64(6) {
		c := device.NewCrash(32<<10, seed) // the log ends at block 56: 28 KiB
		opts := testOpts(40)
		opts.DataSums = sums
		c.KeepHistory()
		j := mustOpen(t, c, opts)
		rng := rand.New(rand.NewPCG(uint64(seed), 99))

		type point struct {
			durable uint64  // synced before this flush point
			start   Options // replay start of the newest durable "superblock"
		}
		// points[p] is what holds at flush point p; record notes what
		// became true at the current point (earlier points keep theirs).
		points := []point{{0, opts}}
		record := func(d uint64, o Options) {
			for len(points) <= c.FlushPoints() {
				points = append(points, points[len(points)-1])
			}
			points[c.FlushPoints()] = point{d, o}
		}
		start := opts
		for i := uint64(1); i <= 120; i++ {
			if _, err := j.Append(testTxn(i, rng, 6)); err != nil {
				// Log full: checkpoint (sync, mark, "superblock", release).
				j.Sync(i - 1)
				pos, seq := j.Mark()
				c.Flush() // the superblock write's flush
				start.Head, start.NextSeq = pos, seq
				record(i-1, start)
				j.Release(pos)
				mustAppend(t, j, testTxn(i, rng, 6))
			}
			if rng.IntN(3) == 0 {
				if err := j.Sync(i); err != nil {
					t.Fatal(err)
				}
				record(i, start)
			}
		}
		for p := 0; p <= c.FlushPoints(); p++ {
			pt := points[min(p, len(points)-1)]
			for _, mode := range device.CrashModes {
				m, err := c.CrashAt(p, mode)
				if err != nil {
					t.Fatal(err)
				}
				seqs, head, next := replayAll(t, m, pt.start)
				expectRun(t, seqs, pt.start.NextSeq)
				if next-1 < pt.durable {
					t.Fatalf("seed %d point %d %v: replay reached %d, %d was synced", seed, p, mode, next-1, pt.durable)
				}
				// Second life on the crashed image.
				o := pt.start
				o.Head, o.NextSeq, o.Tail = head, next, pt.start.Head.Block
				c2 := device.NewCrashFrom(m.Bytes(), seed)
				j2 := mustOpen(t, c2, o)
				var n2 uint64 // appended in the second life: the log may be full
				for ; n2 < 3; n2++ {
					if _, err := j2.Append(testTxn(next+n2, rng, 6)); err != nil {
						break
					}
				}
				if n2 > 0 {
					if err := j2.Sync(next + n2 - 1); err != nil {
						t.Fatal(err)
					}
				}
				m2, _ := c2.Crash(mode)
				seqs2, _, next2 := replayAll(t, m2, pt.start)
				expectRun(t, seqs2, pt.start.NextSeq)
				if next2 != next+n2 {
					t.Fatalf("seed %d point %d %v: second life: next %d, want %d", seed, p, mode, next2, next+n2)
				}
			}
		}
	}
}

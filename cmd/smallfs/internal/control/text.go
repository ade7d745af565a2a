package control

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// WriteText prints st for people: the statedump file and the default form
// of `smallfs stats`. When prev is an earlier sample of the same daemon,
// operation rates per second since then are added.
func WriteText(w io.Writer, st Stats, prev *Stats) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	p := func(format string, args ...any) { fmt.Fprintf(tw, format, args...) }

	p("smallfs %s\tpid %d\tup %s\n", st.Version, st.Pid, st.Taken.Sub(st.Started).Round(time.Second))
	p("device\t%s\n", st.Device)
	p("mountpoint\t%s\n", st.Mountpoint)
	p("options\t%s\n", st.Options)
	if st.ReadOnly {
		p("read-only\tdevice opened read-only, never written; remount,rw refused\n")
	}
	if st.Failed != "" {
		p("FAILED\tread-only since a device error: changes get EROFS, fsync EIO; unmount, check the device, mount again\n")
		p("  cause\t%s\n", st.Failed)
	}
	if s := st.Space; s != nil {
		p("\nspace\tblock size %d\n", s.BlockSize)
		p("  blocks\t%d total\t%d free\t%d available\t%s used\n", s.Blocks, s.BlocksFree, s.BlocksAvail, percent(s.Blocks-s.BlocksFree, s.Blocks))
		p("  files\t%d total\t%d free\t\t%s used\n", s.Files, s.FilesFree, percent(s.Files-s.FilesFree, s.Files))
	}
	if a := st.Alloc; a != nil {
		p("\nallocator\tfree %d blocks in %d extents, largest %d, pending %d\n", a.FreeBlocks, a.FreeExtents, a.LargestFree, a.PendingBlocks)
		p("  fragmentation\t%.4f\n", a.Score)
		p("  histogram\t%s\n", Histogram(a.Histogram))
		p("  calls\t%d (%d failed)\n", a.Calls, a.Failed)
	}
	if d := st.Dirty; d != nil {
		p("\ndirty data\t%d B\t%d writes throttled\n", d.Bytes, d.Throttled)
	}
	if t := st.Transport; t != nil {
		if t.Kind == TransportRings {
			p("transport\t%s\t%d requests\t%d off the queues\n", t.Kind, t.Requests, t.Async)
		} else {
			p("transport\t%s\n", t.Kind)
		}
		if t.Why != "" {
			p("  why\t%s\n", t.Why)
		}
	}
	if len(st.Ops) > 0 {
		timed := false // latency columns only when the daemon measures it
		for _, op := range st.Ops {
			timed = timed || op.Total > 0
		}
		p("\noperations\tcount\terrors\tabsent")
		if timed {
			p("\tmean\tmax")
		}
		if prev != nil {
			p("\tper second")
		}
		p("\n")
		for _, op := range st.Ops {
			p("  %s\t%d\t%d\t%d", op.Name, op.Count, op.Errors, op.Absent)
			if timed {
				p("\t%s\t%s", mean(op.Total, op.Count), op.Max)
			}
			if prev != nil {
				p("\t%s", rate(op, prev, st.Taken))
			}
			p("\n")
		}
	}
	if len(st.Latency) > 0 {
		p("\nlatency\tcount\tmean\tp50\tp99\n")
		for _, l := range st.Latency {
			p("  %s\t%d\t%s\t%s\t%s\n", l.Name, l.Count, l.Mean, quantile(l.P50), quantile(l.P99))
		}
	}
	p("\nmemory (accounting)\tlive\tbytes\tpeak\ttotal\n")
	for _, l := range st.Accounting.Layers {
		for _, t := range l.Types {
			p("  %s/%s\t%d\t%d\t%d\t%d\n", l.Name, t.Name, t.Live, t.Bytes, t.Peak, t.Total)
		}
	}
	p("\nevents (counters that moved)\n")
	for _, l := range st.Accounting.Layers {
		for _, c := range l.Counters {
			if c.Value != 0 {
				p("  %s.%s\t%d\n", l.Name, c.Name, c.Value)
			}
		}
	}
	r := st.Runtime
	p("\nruntime\theap %d B\tsys %d B\t%d GCs\t%d goroutines\n", r.HeapBytes, r.SysBytes, r.GCs, r.Goroutines)
	return tw.Flush()
}

// quantile prints a bucket bound as "<" it: the histogram knows no more.
func quantile(d time.Duration) string { return "<" + d.String() }

func percent(part, whole uint64) string {
	if whole == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(part)/float64(whole))
}

func mean(total time.Duration, n uint64) time.Duration {
	if n == 0 {
		return 0
	}
	return total / time.Duration(n)
}

func rate(op Op, prev *Stats, now time.Time) string {
	dt := now.Sub(prev.Taken).Seconds()
	if dt <= 0 {
		return "-"
	}
	for _, o := range prev.Ops {
		if o.Name == op.Name {
			return fmt.Sprintf("%.1f", float64(op.Count-o.Count)/dt)
		}
	}
	return fmt.Sprintf("%.1f", float64(op.Count)/dt)
}

// Histogram prints the non-empty buckets of a free-extent histogram
// (bucket k counts extents of 2^k to 2^(k+1)-1 blocks) as size:count.
func Histogram(h []uint64) string {
	var parts []string
	for k, n := range h {
		if n != 0 {
			parts = append(parts, fmt.Sprintf("%d:%d", uint64(1)<<k, n))
		}
	}
	if len(parts) == 0 {
		return "empty"
	}
	return strings.Join(parts, " ")
}

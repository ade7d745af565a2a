package accounting

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"
)

// WriteText writes the statedump form: one section per layer, one line per
// type and per counter, in snapshot order. Anomaly fields appear only when
// nonzero so that a clean dump stays short and a bad one stands out.
//
//	[iobuf]
//	type 4KiB live=2 bytes=8192 total=10 frees=8 peak=12288
//	counter 4KiB.misses 2
func (s Snapshot) WriteText(w io.Writer) error {
	bw := bufio.NewWriter(w)
	for _, l := range s.Layers {
		fmt.Fprintf(bw, "[%s]\n", quote(l.Name))
		for _, t := range l.Types {
			fmt.Fprintf(bw, "type %s", quote(t.Name))
			if t.Size != 0 {
				fmt.Fprintf(bw, " size=%d", t.Size)
			}
			fmt.Fprintf(bw, " live=%d bytes=%d total=%d frees=%d peak=%d", t.Live, t.Bytes, t.Total, t.Frees, t.Peak)
			if t.Anomalies != 0 || t.AnomalyBytes != 0 {
				fmt.Fprintf(bw, " anomalies=%d anomaly_bytes=%d", t.Anomalies, t.AnomalyBytes)
			}
			bw.WriteByte('\n')
		}
		for _, c := range l.Counters {
			fmt.Fprintf(bw, "counter %s %d", quote(c.Name), c.Value)
			if c.Anomalies != 0 {
				fmt.Fprintf(bw, " anomalies=%d", c.Anomalies)
			}
			bw.WriteByte('\n')
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("accounting: write statedump: %w", err)
	}
	return nil
}

// quote leaves a name bare when it is a single printable word without the
// characters the format uses, and quotes it Go-style otherwise, so every
// line splits on spaces.
func quote(name string) string {
	if name != "" && !strings.ContainsFunc(name, func(r rune) bool {
		return unicode.IsSpace(r) || !unicode.IsPrint(r) || strings.ContainsRune(`"[]=`, r)
	}) {
		return name
	}
	return strconv.Quote(name)
}

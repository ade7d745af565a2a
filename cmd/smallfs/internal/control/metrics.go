package control

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// WriteMetrics writes st in the Prometheus text exposition format
// (version 0.0.4): one HELP and TYPE line per family, then its samples.
func WriteMetrics(w io.Writer, st Stats) error {
	b := bufio.NewWriter(w)
	fam := func(name, typ, help string) {
		fmt.Fprintf(b, "# HELP smallfs_%s %s\n# TYPE smallfs_%s %s\n", name, help, name, typ)
	}
	sample := func(name string, v float64, labels ...string) {
		b.WriteString("smallfs_" + name)
		if len(labels) > 0 {
			b.WriteByte('{')
			for i := 0; i < len(labels); i += 2 {
				if i > 0 {
					b.WriteByte(',')
				}
				b.WriteString(labels[i] + `="` + escapeLabel(labels[i+1]) + `"`)
			}
			b.WriteByte('}')
		}
		b.WriteString(" " + strconv.FormatFloat(v, 'g', -1, 64) + "\n")
	}
	gauge := func(name, help string, v float64) {
		fam(name, "gauge", help)
		sample(name, v)
	}

	fam("info", "gauge", "Constant 1, labelled with what is mounted.")
	sample("info", 1, "version", st.Version, "device", st.Device, "mountpoint", st.Mountpoint)
	gauge("uptime_seconds", "Seconds since the daemon mounted the filesystem.", st.Taken.Sub(st.Started).Seconds())
	failed := 0.0
	if st.Failed != "" {
		failed = 1
	}
	gauge("failed", "1 once a device error writing metadata made the volume read-only until the next mount.", failed)
	if s := st.Space; s != nil {
		gauge("block_size_bytes", "Filesystem block size.", float64(s.BlockSize))
		gauge("blocks", "Blocks in the filesystem.", float64(s.Blocks))
		gauge("blocks_free", "Free blocks.", float64(s.BlocksFree))
		gauge("blocks_avail", "Blocks available to unprivileged users.", float64(s.BlocksAvail))
		gauge("files", "Inode capacity.", float64(s.Files))
		gauge("files_free", "Free inodes.", float64(s.FilesFree))
	}
	if a := st.Alloc; a != nil {
		gauge("alloc_free_extents", "Free extents.", float64(a.FreeExtents))
		gauge("alloc_largest_free_blocks", "Blocks in the largest free extent.", float64(a.LargestFree))
		gauge("alloc_pending_blocks", "Blocks freed but not reusable before the next commit.", float64(a.PendingBlocks))
		gauge("alloc_fragmentation", "Fragmentation score of free space, 0 (one extent) to 1.", a.Score)
		fam("alloc_free_extents_by_size", "gauge", "Free extents of at least min_blocks and less than twice that.")
		for k, n := range a.Histogram {
			sample("alloc_free_extents_by_size", float64(n), "min_blocks", strconv.FormatUint(1<<k, 10))
		}
	}
	if d := st.Dirty; d != nil {
		gauge("dirty_bytes", "Memory held by dirty data buffers (bounded by the dirty limit).", float64(d.Bytes))
		fam("throttled_writes_total", "counter", "Writes that waited for the background write-back.")
		sample("throttled_writes_total", float64(d.Throttled))
	}
	if t := st.Transport; t != nil && t.Kind == TransportRings {
		fam("uring_requests_total", "counter", "FUSE requests answered through io_uring.")
		sample("uring_requests_total", float64(t.Requests))
	}
	if len(st.Ops) > 0 {
		fam("requests_total", "counter", "FUSE requests served, by operation.")
		for _, op := range st.Ops {
			sample("requests_total", float64(op.Count), "op", op.Name)
		}
		fam("request_errors_total", "counter", "FUSE requests that failed, by operation.")
		for _, op := range st.Ops {
			sample("request_errors_total", float64(op.Errors), "op", op.Name)
		}
		fam("request_absent_total", "counter", "FUSE requests answered that the name or attribute asked for is not there (answers, not errors), by operation.")
		for _, op := range st.Ops {
			sample("request_absent_total", float64(op.Absent), "op", op.Name)
		}
	}
	if len(st.Latency) > 0 {
		fam("request_latency_seconds", "gauge", "Upper bound of the latency bucket holding the quantile, by operation.")
		for _, l := range st.Latency {
			sample("request_latency_seconds", l.P50.Seconds(), "op", l.Name, "quantile", "0.5")
			sample("request_latency_seconds", l.P99.Seconds(), "op", l.Name, "quantile", "0.99")
		}
	}
	acct := []struct {
		name, help string
		typ        string
		value      func(live, bytes, peak int64, total uint64) float64
	}{
		{"live_objects", "Objects alive, by layer and type.", "gauge", func(l, _, _ int64, _ uint64) float64 { return float64(l) }},
		{"live_bytes", "Bytes held by live objects, by layer and type.", "gauge", func(_, b, _ int64, _ uint64) float64 { return float64(b) }},
		{"peak_bytes", "Highest live bytes seen, by layer and type.", "gauge", func(_, _, p int64, _ uint64) float64 { return float64(p) }},
		{"allocated_total", "Objects ever allocated, by layer and type.", "counter", func(_, _, _ int64, t uint64) float64 { return float64(t) }},
	}
	for _, m := range acct {
		fam("memory_"+m.name, m.typ, m.help)
		for _, l := range st.Accounting.Layers {
			for _, t := range l.Types {
				sample("memory_"+m.name, m.value(t.Live, t.Bytes, t.Peak, t.Total), "layer", l.Name, "type", t.Name)
			}
		}
	}
	fam("events_total", "counter", "Event counters of each layer (pool hits and misses, ...).")
	for _, l := range st.Accounting.Layers {
		for _, c := range l.Counters {
			sample("events_total", float64(c.Value), "layer", l.Name, "name", c.Name)
		}
	}
	gauge("go_heap_bytes", "Go heap in use.", float64(st.Runtime.HeapBytes))
	gauge("go_sys_bytes", "Memory the Go runtime obtained from the system.", float64(st.Runtime.SysBytes))
	gauge("go_goroutines", "Goroutines.", float64(st.Runtime.Goroutines))
	return b.Flush()
}

func escapeLabel(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
}

// MetricsServer serves /metrics over HTTP.
type MetricsServer struct {
	srv  *http.Server
	addr string
	done chan struct{}
}

// ServeMetrics listens on addr (the caller has checked it is loopback)
// and serves the figures of source at /metrics.
func ServeMetrics(addr string, source func() Stats) (*MetricsServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		_ = WriteMetrics(w, source())
	})
	m := &MetricsServer{
		srv:  &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second},
		addr: ln.Addr().String(),
		done: make(chan struct{}),
	}
	go func() {
		defer close(m.done)
		_ = m.srv.Serve(ln) // returns ErrServerClosed after Close
	}()
	return m, nil
}

// Addr is the address actually listened on (the port, if 0 was asked).
func (m *MetricsServer) Addr() string { return m.addr }

// Close stops serving.
func (m *MetricsServer) Close() error {
	err := m.srv.Close()
	<-m.done
	return err
}

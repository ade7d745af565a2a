package control

import (
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/smallfs/smallfs/accounting"
	"github.com/smallfs/smallfs/internal/layout"
)

func sample() Stats {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	return Stats{
		Version: "v1", Pid: 42, Device: "/img", Mountpoint: "/mnt", Options: "rw",
		Started: t0, Taken: t0.Add(90 * time.Second),
		Space:     &Space{BlockSize: 4096, Blocks: 100, BlocksFree: 75, BlocksAvail: 75, Files: 10, FilesFree: 9},
		Alloc:     &Alloc{FreeBlocks: 75, FreeExtents: 2, LargestFree: 64, Score: 0.25, Histogram: []uint64{0, 1, 0, 1}},
		Dirty:     &Dirty{Bytes: 65536, Throttled: 4},
		Transport: &Transport{Kind: TransportRings, Why: "uring=auto and the kernel offers FUSE over io_uring", Requests: 1234, Async: 5},
		Latency: []Latency{{Name: "LOOKUP", Count: 10, Mean: 1500 * time.Microsecond,
			P50: 1024 * time.Microsecond, P99: 4096 * time.Microsecond}},
		Ops: []Op{{Name: "LOOKUP", Count: 10, Errors: 1, Absent: 6, Total: 10 * time.Millisecond, Max: 3 * time.Millisecond}},
		Accounting: accounting.Snapshot{Layers: []accounting.LayerStat{{
			Name:     "iobuf",
			Types:    []accounting.TypeStat{{Name: "4KiB", Live: 2, Bytes: 8192, Peak: 12288, Total: 5}},
			Counters: []accounting.CounterStat{{Name: "4KiB.misses", Value: 3}},
		}}},
		Runtime: Runtime{HeapBytes: 1 << 20, Goroutines: 7},
	}
}

func TestFetchRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run", "s.sock")
	want := sample()
	srv, err := Listen(path, func() Stats { return want })
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("socket mode %v, %v; want 0600", fi.Mode(), err)
	}
	got, err := Fetch(path, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if got.Pid != 42 || got.Space == nil || got.Space.Blocks != 100 || len(got.Ops) != 1 || got.Dirty == nil || *got.Dirty != *want.Dirty ||
		got.Transport == nil || *got.Transport != *want.Transport ||
		len(got.Latency) != 1 || got.Latency[0] != want.Latency[0] ||
		got.Ops[0].Max != 3*time.Millisecond || !got.Started.Equal(want.Started) ||
		len(got.Accounting.Layers) != 1 || got.Accounting.Layers[0].Types[0].Peak != 12288 {
		t.Errorf("Fetch = %+v", got)
	}
	if _, err := Listen(path, nil); !errors.Is(err, ErrInUse) {
		t.Errorf("second Listen = %v, want ErrInUse", err)
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket left after Close: %v", err)
	}
	if _, err := Fetch(path, time.Second); !errors.Is(err, ErrNoDaemon) {
		t.Errorf("Fetch after Close = %v, want ErrNoDaemon", err)
	}
}

func TestListenReplacesStaleSocket(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.sock")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close() // the file stays, as after kill -9
	if _, err := Fetch(path, time.Second); !errors.Is(err, ErrNoDaemon) {
		t.Errorf("Fetch on a stale socket = %v, want ErrNoDaemon", err)
	}
	srv, err := Listen(path, sample)
	if err != nil {
		t.Fatalf("Listen over a stale socket: %v", err)
	}
	defer srv.Close()
	if _, err := Fetch(path, 5*time.Second); err != nil {
		t.Error(err)
	}
}

func TestBadRequest(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.sock")
	srv, err := Listen(path, sample)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	for req, want := range map[string]string{"nonsense\n": "malformed", `{"op":"x"}` + "\n": "unknown request"} {
		c, err := net.Dial("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		c.Write([]byte(req))
		buf := make([]byte, 200)
		n, _ := c.Read(buf)
		c.Close()
		if !strings.Contains(string(buf[:n]), want) {
			t.Errorf("request %q: answer %q, want %q", req, buf[:n], want)
		}
	}
}

func TestDevName(t *testing.T) {
	for dev, want := range map[uint64]string{0x801: "8:1", 0x28: "0:40"} {
		if got := DevName(dev); got != want {
			t.Errorf("DevName(%#x) = %s, want %s", dev, got, want)
		}
	}
	// Linux's new_encode_dev of major 259, minor 300000.
	const major, minor = 259, 300000
	dev := uint64(minor&0xff) | uint64(major&0xfff)<<8 | uint64(minor&^0xff)<<12 | uint64(major&^0xfff)<<32
	if got := DevName(dev); got != "259:300000" {
		t.Errorf("DevName(%#x) = %s, want 259:300000", dev, got)
	}
}

func TestWriteTextWithoutLatency(t *testing.T) {
	st := sample()
	st.Ops[0].Total, st.Ops[0].Max = 0, 0
	st.Latency = nil
	st.Accounting.Layers[0].Counters = append(st.Accounting.Layers[0].Counters, accounting.CounterStat{Name: "never", Value: 0})
	var b strings.Builder
	if err := WriteText(&b, st, nil); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); strings.Contains(out, "mean") || strings.Contains(out, "never") || !strings.Contains(out, "4KiB.misses") {
		t.Errorf("latency columns without latency, or a zero counter shown:\n%s", out)
	}
}

func TestWriteText(t *testing.T) {
	st := sample()
	prev := sample()
	prev.Taken = st.Taken.Add(-2 * time.Second)
	prev.Ops[0].Count = 4
	var b strings.Builder
	if err := WriteText(&b, st, &prev); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"pid 42", "up 1m30s", "25.0% used", "largest 64", "fragmentation  0.2500", "2:1 8:1",
		"count  errors  absent", "LOOKUP    10     1       6", "65536 B", "4 writes throttled", "io_uring  1234 requests  5 off the queues", "  why       uring=auto and the kernel offers FUSE over io_uring", "p99", "<1.024ms", "<4.096ms", "LOOKUP", "1ms", "3.0", "iobuf/4KiB", "12288", "iobuf.4KiB.misses", "7 goroutines",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
}

// TestWriteTextReadOnly: a daemon that opened its device read-only says
// so; one that did not says nothing of it.
func TestWriteTextReadOnly(t *testing.T) {
	for _, ro := range []bool{false, true} {
		st := sample()
		st.ReadOnly = ro
		var b strings.Builder
		if err := WriteText(&b, st, nil); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(b.String(), "read-only   device opened read-only, never written; remount,rw refused"); got != ro {
			t.Errorf("ReadOnly %v: text\n%s", ro, b.String())
		}
	}
}

// TestWriteTextFailed: a volume a device error stopped says so, and why,
// in the text and in the metrics; a healthy one says nothing of it.
func TestWriteTextFailed(t *testing.T) {
	for _, cause := range []string{"", "device error writing the log: flush: input/output error"} {
		st := sample()
		st.Failed = cause
		var b, m strings.Builder
		if err := WriteText(&b, st, nil); err != nil {
			t.Fatal(err)
		}
		if err := WriteMetrics(&m, st); err != nil {
			t.Fatal(err)
		}
		failed := cause != ""
		if got := strings.Contains(b.String(), "FAILED      read-only since a device error"); got != failed {
			t.Errorf("Failed %q: text\n%s", cause, b.String())
		}
		if failed && !strings.Contains(b.String(), "  cause     "+cause+"\n") {
			t.Errorf("the text does not give the cause:\n%s", b.String())
		}
		want := "smallfs_failed 0\n"
		if failed {
			want = "smallfs_failed 1\n"
		}
		if !strings.Contains(m.String(), want) {
			t.Errorf("Failed %q: metrics lack %q", cause, want)
		}
	}
}

func TestMetrics(t *testing.T) {
	st := sample()
	st.Device = `/dev/"odd"`
	m, err := ServeMetrics("127.0.0.1:0", func() Stats { return st })
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	resp, err := http.Get("http://" + m.Addr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	out := string(body)
	for _, want := range []string{
		"# TYPE smallfs_blocks_free gauge\nsmallfs_blocks_free 75\n",
		`smallfs_info{version="v1",device="/dev/\"odd\"",mountpoint="/mnt"} 1`,
		`smallfs_requests_total{op="LOOKUP"} 10`,
		`smallfs_request_errors_total{op="LOOKUP"} 1`,
		`smallfs_request_absent_total{op="LOOKUP"} 6`,
		`smallfs_memory_peak_bytes{layer="iobuf",type="4KiB"} 12288`,
		`smallfs_events_total{layer="iobuf",name="4KiB.misses"} 3`,
		`smallfs_alloc_free_extents_by_size{min_blocks="8"} 1`,
		"smallfs_uptime_seconds 90\n",
		"smallfs_alloc_fragmentation 0.25\n",
		"smallfs_dirty_bytes 65536\n",
		"# TYPE smallfs_uring_requests_total counter\nsmallfs_uring_requests_total 1234\n",
		`smallfs_request_latency_seconds{op="LOOKUP",quantile="0.99"} 0.004096`,
		"# TYPE smallfs_throttled_writes_total counter\nsmallfs_throttled_writes_total 4\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("metrics lack %q:\n%s", want, out)
		}
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Errorf("content type %q", ct)
	}
}

// TestSyncAndRemounted: the daemon's handlers run for sync and remounted
// requests, their errors reach the client, and a daemon without them
// refuses the request.
func TestSyncAndRemounted(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.sock")
	var mu sync.Mutex // the handlers run on the server's goroutines
	syncs := 0
	var told []bool
	fail := false
	srv, err := Serve(path, Handlers{
		Stats: sample,
		Sync: func() error {
			mu.Lock()
			defer mu.Unlock()
			syncs++
			if fail {
				return errors.New("disk on fire")
			}
			return nil
		},
		Remounted: func(ro bool) error { mu.Lock(); told = append(told, ro); mu.Unlock(); return nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := Sync(path, time.Second); err != nil {
		t.Error(err)
	}
	mu.Lock()
	fail = true
	mu.Unlock()
	if err := Sync(path, time.Second); err == nil || !strings.Contains(err.Error(), "disk on fire") {
		t.Errorf("failing Sync = %v", err)
	}
	if err := Remounted(path, true, time.Second); err != nil {
		t.Error(err)
	}
	if err := Remounted(path, false, time.Second); err != nil {
		t.Error(err)
	}
	mu.Lock()
	if syncs != 2 || len(told) != 2 || !told[0] || told[1] {
		t.Errorf("%d syncs, Remounted told %v; want 2 and [true false]", syncs, told)
	}
	mu.Unlock()
	srv.Close()

	srv, err = Listen(path, sample)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if err := Sync(path, time.Second); err == nil || !strings.Contains(err.Error(), `unknown request "sync"`) {
		t.Errorf("Sync of a stats-only server = %v", err)
	}
	srv.Close()
	if err := Sync(path, time.Second); !errors.Is(err, ErrNoDaemon) {
		t.Errorf("Sync without a daemon = %v, want ErrNoDaemon", err)
	}
}

// TestSocketDirOthersControl: where the run directory is shared (TMPDIR,
// without XDG_RUNTIME_DIR) another user may have made it first. Whoever
// owns the directory can put a listener of their own in place of the
// daemon's socket, to answer a sync or a remount "done" and show made-up
// figures: a daemon does not listen there, and a client does not ask
// there.
func TestSocketDirOthersControl(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(dir string) error
	}{
		{"writable by others", func(dir string) error { return os.Chmod(dir, 0o777) }},
		{"writable by the group", func(dir string) error { return os.Chmod(dir, 0o770) }},
		{"another user's", func(dir string) error {
			if os.Geteuid() != 0 {
				t.Skip("needs root to give the directory away")
			}
			return os.Chown(dir, 65534, 65534)
		}},
		{"a symlink", func(dir string) error {
			if err := os.Rename(dir, dir+".real"); err != nil {
				return err
			}
			return os.Symlink(dir+".real", dir)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "s.sock")
			// A listener already there, as the other user would leave it.
			ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			go func() {
				for {
					c, err := ln.Accept()
					if err != nil {
						return
					}
					io.WriteString(c, `{"done":true}`+"\n")
					c.Close()
				}
			}()
			if err := tc.setup(dir); err != nil {
				t.Fatal(err)
			}
			if err := Sync(path, time.Second); err == nil || !strings.Contains(err.Error(), "private") {
				t.Errorf("Sync through a socket in a directory others control: %v, want a refusal", err)
			}
			if srv, err := Listen(filepath.Join(dir, "mine.sock"), sample); err == nil {
				srv.Close()
				t.Error("Listen in a directory others control succeeded")
			}
		})
	}
}

// TestLayoutRequest: a daemon with a layout handler answers its figures
// or its error; one without refuses the request.
func TestLayoutRequest(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.sock")
	fail := errors.New("walk failed")
	var mu sync.Mutex
	var answer error
	srv, err := Serve(path, Handlers{Stats: sample, Layout: func() (layout.Figures, error) {
		mu.Lock()
		defer mu.Unlock()
		return layout.Figures{BlockSize: 4096, Files: 3, Spread: layout.Spread{Dirs: 1, Median: 1.5}}, answer
	}})
	if err != nil {
		t.Fatal(err)
	}
	f, err := Layout(path, time.Second)
	if err != nil || f.Files != 3 || f.Spread.Median != 1.5 {
		t.Errorf("Layout = %+v, %v", f, err)
	}
	mu.Lock()
	answer = fail
	mu.Unlock()
	if _, err := Layout(path, time.Second); err == nil || !strings.Contains(err.Error(), "walk failed") {
		t.Errorf("failing Layout = %v", err)
	}
	srv.Close()
	srv, err = Listen(path, sample)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if _, err := Layout(path, time.Second); err == nil || !strings.Contains(err.Error(), "unknown request") {
		t.Errorf("Layout of a daemon without it = %v", err)
	}
}

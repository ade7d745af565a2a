package accounting

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestWriteText(t *testing.T) {
	reg := NewRegistry()
	// Created out of order: the dump is sorted.
	io := reg.Layer("iobuf")
	io.Counter("4KiB.misses").Add(2)
	io.FixedType("8KiB", 8192).Alloc(8192)
	four := io.Type("4KiB")
	for range 3 {
		four.Alloc(4096)
	}
	four.Free(4096)
	reg.Layer("fs").Type("odd name").Free(1)

	var sb strings.Builder
	if err := reg.Snapshot().WriteText(&sb); err != nil {
		t.Fatal(err)
	}
	want := `[fs]
type "odd name" live=0 bytes=0 total=0 frees=1 peak=0 anomalies=1 anomaly_bytes=1
[iobuf]
type 4KiB live=2 bytes=8192 total=3 frees=1 peak=12288
type 8KiB size=8192 live=1 bytes=8192 total=1 frees=0 peak=8192
counter 4KiB.misses 2
`
	if got := sb.String(); got != want {
		t.Fatalf("text form:\n%s\nwant:\n%s", got, want)
	}
}

func TestSnapshotJSONRoundTrip(t *testing.T) {
	reg := NewRegistry()
	reg.Layer("alloc").Type("extent").Alloc(48)
	reg.Layer("alloc").Counter("searches").Inc()
	s := reg.Snapshot()
	data, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var back Snapshot
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	l := mustLayer(t, back, "alloc")
	if ty, ok := l.Type("extent"); !ok || ty.Bytes != 48 || ty.Live != 1 {
		t.Fatalf("type after round trip: %+v", ty)
	}
	if c, ok := l.Counter("searches"); !ok || c.Value != 1 {
		t.Fatalf("counter after round trip: %+v", c)
	}
	if _, ok := back.Layer("nope"); ok {
		t.Fatal("found a layer that does not exist")
	}
}

type failWriter struct{}

var errDisk = errors.New("disk full")

func (failWriter) Write([]byte) (int, error) { return 0, errDisk }

func TestWriteTextReportsWriterError(t *testing.T) {
	reg := NewRegistry()
	reg.Layer("l").Type("t").Alloc(1)
	if err := reg.Snapshot().WriteText(failWriter{}); !errors.Is(err, errDisk) {
		t.Fatalf("err = %v, want wrapped %v", err, errDisk)
	}
}

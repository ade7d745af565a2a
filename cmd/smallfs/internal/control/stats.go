package control

import (
	"time"

	"github.com/smallfs/smallfs/accounting"
)

// Stats is what a running daemon reports: its identity, then one section
// per layer. A section the daemon cannot fill (its layer is not wired in)
// is absent, never zero-filled.
type Stats struct {
	Version    string `json:"version"`
	Pid        int    `json:"pid"`
	Device     string `json:"device"`
	Mountpoint string `json:"mountpoint"`
	Options    string `json:"options"` // effective mount options
	// ReadOnly: the daemon opened its device read-only (mounted ro) and
	// writes nothing to it; remount,rw is refused.
	ReadOnly bool `json:"read_only,omitempty"`
	// Failed: a device error writing metadata stopped the volume, and
	// why; changes are refused (EROFS) and fsync fails (EIO) until the
	// next mount. Empty while the volume takes changes.
	Failed  string    `json:"failed,omitempty"`
	Started time.Time `json:"started"`
	Taken   time.Time `json:"taken"` // when these figures were read

	Space      *Space              `json:"space,omitempty"`
	Alloc      *Alloc              `json:"alloc,omitempty"`
	Dirty      *Dirty              `json:"dirty,omitempty"`
	Transport  *Transport          `json:"transport,omitempty"`
	Ops        []Op                `json:"ops,omitempty"`
	Latency    []Latency           `json:"latency,omitempty"`
	Accounting accounting.Snapshot `json:"accounting"`
	Runtime    Runtime             `json:"runtime"`
}

// Space is what statfs reports (df, df -i).
type Space struct {
	BlockSize   uint32 `json:"block_size"`
	Blocks      uint64 `json:"blocks"`
	BlocksFree  uint64 `json:"blocks_free"`
	BlocksAvail uint64 `json:"blocks_avail"`
	Files       uint64 `json:"files"`
	FilesFree   uint64 `json:"files_free"`
}

// Alloc is the allocator's view of free space, in blocks.
type Alloc struct {
	FreeBlocks    uint64  `json:"free_blocks"`
	FreeExtents   uint64  `json:"free_extents"`
	LargestFree   uint64  `json:"largest_free"`
	PendingBlocks uint64  `json:"pending_blocks"` // freed, reusable after the next commit
	Score         float64 `json:"fragmentation"`  // 0 one extent .. 1 all single blocks
	// Histogram[k] counts free extents of 2^k to 2^(k+1)-1 blocks; trailing
	// zero buckets are cut.
	Histogram []uint64 `json:"histogram"`
	Calls     uint64   `json:"calls"`
	Failed    uint64   `json:"failed"`
}

// Dirty is the volume's dirty data: written, not yet on the device.
type Dirty struct {
	Bytes     int64  `json:"bytes"`     // held by dirty buffers, what the dirty limit bounds
	Throttled uint64 `json:"throttled"` // writes that waited for the background write-back
}

// Transport kinds.
const (
	TransportRings  = "io_uring"
	TransportDevice = "/dev/fuse"
)

// Transport is how the kernel's requests reach the daemon.
type Transport struct {
	Kind     string `json:"kind"`     // "io_uring" or "/dev/fuse"
	Why      string `json:"why"`      // the uring option, and what the kernel offered
	Requests uint64 `json:"requests"` // answered through the rings
	Async    uint64 `json:"async"`    // of which off a queue's thread (FSYNC, FLUSH, ...)
}

// Op is the count and latency of one kind of request. Errors are the
// requests that failed; Absent those answered that the name or attribute
// asked for is not there (a LOOKUP of a missing name, a GETXATTR of an
// attribute the file lacks): answers, not errors.
type Op struct {
	Name   string        `json:"name"`
	Count  uint64        `json:"count"`
	Errors uint64        `json:"errors"`
	Absent uint64        `json:"absent"`
	Total  time.Duration `json:"total_ns"`
	Max    time.Duration `json:"max_ns"`
}

// Latency is how long the daemon took to serve one kind of request, from
// a log2 histogram: P50 and P99 are the upper bounds of the buckets holding
// those quantiles, so they are right to within a factor of two.
type Latency struct {
	Name  string        `json:"name"`
	Count uint64        `json:"count"`
	Mean  time.Duration `json:"mean_ns"`
	P50   time.Duration `json:"p50_ns"`
	P99   time.Duration `json:"p99_ns"`
}

// Runtime is the Go runtime's memory and scheduling figures.
type Runtime struct {
	HeapBytes  uint64 `json:"heap_bytes"` // live and not yet collected heap
	SysBytes   uint64 `json:"sys_bytes"`  // obtained from the OS
	GCs        uint32 `json:"gcs"`
	Goroutines int    `json:"goroutines"`
}

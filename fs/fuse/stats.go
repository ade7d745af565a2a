package fuse

import (
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/smallfs/smallfs/accounting"
)

// opcode names the requests the adapter serves, for the per-opcode counters.
// The numbering is ours (dense, so the counters are a plain array), not the
// kernel's.
type opcode uint8

const (
	opLookup opcode = iota
	opForget
	opGetAttr
	opSetAttr
	opMknod
	opMkdir
	opUnlink
	opRmdir
	opRename
	opLink
	opSymlink
	opReadlink
	opAccess
	opCreate
	opOpen
	opRead
	opWrite
	opFlush
	opRelease
	opFsync
	opFallocate
	opLseek
	opOpenDir
	opReadDir
	opReadDirPlus
	opReleaseDir
	opFsyncDir
	opStatFs
	opGetXAttr
	opListXAttr
	opSetXAttr
	opRemoveXAttr
	opTmpfile
	numOps
)

var opNames = [numOps]string{
	"LOOKUP", "FORGET", "GETATTR", "SETATTR", "MKNOD", "MKDIR", "UNLINK",
	"RMDIR", "RENAME", "LINK", "SYMLINK", "READLINK", "ACCESS", "CREATE",
	"OPEN", "READ", "WRITE", "FLUSH", "RELEASE", "FSYNC", "FALLOCATE",
	"LSEEK", "OPENDIR", "READDIR", "READDIRPLUS", "RELEASEDIR", "FSYNCDIR",
	"STATFS", "GETXATTR", "LISTXATTR", "SETXATTR", "REMOVEXATTR", "TMPFILE",
}

func (op opcode) String() string { return opNames[op] }

// counters are the adapter's figures in the accounting layer "fuse":
// counters "op-NAME" (requests), "err-NAME" (failed: answered with an
// errno that reports a failure), "absent-NAME" (answered that what was
// asked for is not there, see outcomeOf) and "ns-NAME" (nanoseconds spent
// serving them), and the record "request", whose live count is the
// requests being served; plus a latency histogram per opcode (latency.go).
// The counters are looked up once, so a request costs two clock reads,
// five atomic adds (six when it fails or finds nothing) and no allocation.
type counters struct {
	requests [numOps]*accounting.Counter
	errors   [numOps]*accounting.Counter
	absent   [numOps]*accounting.Counter
	nanos    [numOps]*accounting.Counter
	latency  [numOps]histogram
	inFlight *accounting.Record
}

func newCounters(reg *accounting.Registry) *counters {
	l := reg.Layer(Layer)
	c := &counters{inFlight: l.Type("request")}
	for op := range numOps {
		c.requests[op] = l.Counter("op-" + op.String())
		c.errors[op] = l.Counter("err-" + op.String())
		c.absent[op] = l.Counter("absent-" + op.String())
		c.nanos[op] = l.Counter("ns-" + op.String())
	}
	return c
}

// outcome is how a request ended, for the counters.
type outcome uint8

const (
	served outcome = iota // answered OK
	absent                // answered that the name or attribute is not there
	failed                // answered with an errno that reports a failure
)

// outcomeOf tells an answer from a failure. A lookup of a name that does
// not exist (ENOENT, or a negative entry) and a GETXATTR of an attribute
// an inode does not have (ENODATA) or that the mount does not support
// (EOPNOTSUPP: security labels and ACLs, asked by the kernel before the
// first write to each file and by ls -l) answer the question asked: they
// are counted as absent, not as errors.
func outcomeOf(op opcode, st fuse.Status) outcome {
	switch {
	case st == fuse.OK:
		return served
	case op == opLookup && st == fuse.ENOENT,
		op == opGetXAttr && (st == fuse.ENODATA || st == fuse.Status(syscall.EOPNOTSUPP)):
		return absent
	}
	return failed
}

// Layer is the name of the adapter's accounting layer.
const Layer = "fuse"

// begin counts a request and returns its start time.
func (c *counters) begin(op opcode) time.Time {
	c.requests[op].Inc()
	c.inFlight.Alloc(0)
	return time.Now()
}

func (c *counters) end(op opcode, start time.Time, how outcome) {
	d := time.Since(start)
	c.nanos[op].Add(int64(d))
	c.latency[op].add(d)
	switch how {
	case failed:
		c.errors[op].Inc()
	case absent:
		c.absent[op].Inc()
	}
	c.inFlight.Free(0)
}

// latencies reads every opcode's figures that has served a request.
func (c *counters) latencies() []OpLatency {
	var out []OpLatency
	for op := range numOps {
		l := OpLatency{Op: op.String(), Total: time.Duration(c.nanos[op].Value())}
		for i := range l.Buckets {
			l.Buckets[i] = c.latency[op][i].Load()
			l.Count += l.Buckets[i]
		}
		if l.Count > 0 {
			out = append(out, l)
		}
	}
	return out
}

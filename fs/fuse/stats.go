package fuse

import "github.com/smallfs/smallfs/accounting"

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
	numOps
)

var opNames = [numOps]string{
	"LOOKUP", "FORGET", "GETATTR", "SETATTR", "MKNOD", "MKDIR", "UNLINK",
	"RMDIR", "RENAME", "LINK", "SYMLINK", "READLINK", "ACCESS", "CREATE",
	"OPEN", "READ", "WRITE", "FLUSH", "RELEASE", "FSYNC", "FALLOCATE",
	"LSEEK", "OPENDIR", "READDIR", "READDIRPLUS", "RELEASEDIR", "FSYNCDIR",
	"STATFS", "GETXATTR", "LISTXATTR", "SETXATTR", "REMOVEXATTR",
}

func (op opcode) String() string { return opNames[op] }

// counters are the adapter's figures in the accounting layer "fuse":
// counters "op-NAME" (requests) and "err-NAME" (answered with an errno;
// negative lookups are answers, not errors), and the record "request", whose
// live count is the requests being served. The counters are looked up once,
// so a request costs two or three striped atomic adds and no allocation.
type counters struct {
	requests [numOps]*accounting.Counter
	errors   [numOps]*accounting.Counter
	inFlight *accounting.Record
}

func newCounters(reg *accounting.Registry) *counters {
	l := reg.Layer(Layer)
	c := &counters{inFlight: l.Type("request")}
	for op := range numOps {
		c.requests[op] = l.Counter("op-" + op.String())
		c.errors[op] = l.Counter("err-" + op.String())
	}
	return c
}

// Layer is the name of the adapter's accounting layer.
const Layer = "fuse"

func (c *counters) begin(op opcode) {
	c.requests[op].Inc()
	c.inFlight.Alloc(0)
}

func (c *counters) end(op opcode, failed bool) {
	if failed {
		c.errors[op].Inc()
	}
	c.inFlight.Free(0)
}

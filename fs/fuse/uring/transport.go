package uring

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// The FUSE side of the ABI (include/uapi/linux/fuse.h, Linux 6.14+).
const (
	cmdRegister       = 1 // FUSE_IO_URING_CMD_REGISTER
	cmdCommitAndFetch = 2 // FUSE_IO_URING_CMD_COMMIT_AND_FETCH

	// struct fuse_uring_req_header: in_out[128], op_in[128], then
	// struct fuse_uring_ent_in_out {flags, commit_id, payload_sz, padding, reserved}.
	hdrInOut     = 0
	hdrOpIn      = 128
	hdrCommitID  = 256 + 8
	hdrPayloadSz = 256 + 16
	headerSize   = 288

	inHeaderSize  = 40 // struct fuse_in_header
	outHeaderSize = 16 // struct fuse_out_header

	// SQE fields used by IORING_OP_URING_CMD.
	sqeOpcode   = 0
	sqeFd       = 4
	sqeCmdOp    = 8
	sqeAddr     = 16
	sqeLen      = 24
	sqeUserData = 32
	sqeCmd      = 48 // struct fuse_uring_cmd_req {flags, commit_id, qid}

	opRead  = 22      // IORING_OP_READ
	wakeTag = 1 << 63 // user data of the eventfd read that wakes a queue's goroutine

	opFlush    = 25
	opFsync    = 20
	opFsyncdir = 30
	opSetlkw   = 33

	enableParam = "/sys/module/fuse/parameters/enable_uring"
)

// ErrUnavailable is returned by Start when the kernel cannot serve FUSE
// over io_uring: too old, or its fuse module's enable_uring is off.
var ErrUnavailable = errors.New("FUSE over io_uring is not available")

// Available reports whether the kernel offers FUSE over io_uring to new
// mounts (Linux 6.14+, with /sys/module/fuse/parameters/enable_uring on).
func Available() error {
	b, err := os.ReadFile(enableParam)
	if err != nil {
		return fmt.Errorf("%w: %v (Linux 6.14 or later with CONFIG_FUSE_IO_URING)", ErrUnavailable, err)
	}
	if v := strings.TrimSpace(string(b)); v != "Y" && v != "1" {
		return fmt.Errorf("%w: %s is %s (echo Y > it, as root, before mounting)", ErrUnavailable, enableParam, v)
	}
	return nil
}

// Handler answers one request. in holds the request as a read(2) of
// /dev/fuse would (header, then arguments), split over several slices;
// the reply (header, then arguments) goes into out. It returns the reply's
// length, or a status for a request it could not parse.
// (*fuse.ProtocolServer).HandleRequest is one.
type Handler func(in, out [][]byte) (int, fuse.Status)

// Config sizes a Transport.
type Config struct {
	// Depth is the number of requests each queue (one per possible CPU)
	// can hold at once. Default 8, down to 2 on machines with more than
	// 8 CPUs.
	Depth int
	// PayloadSize is the largest request or reply argument, in bytes: the
	// mount's max_write (or its max_pages), at least 8 KiB.
	PayloadSize int
	// OnFailure, if set, is called once (on a goroutine of its own) when
	// a queue stops on a failure rather than on the connection's end, or
	// loses an entry to one: requests the kernel queues for that CPU may
	// then never be answered, so the caller should end the connection.
	OnFailure func(error)
}

// Counters are a Transport's running totals.
type Counters struct {
	Requests uint64 // requests answered through the rings
	Async    uint64 // of which were served off the queue's goroutine
}

// Transport serves a FUSE connection's requests through io_uring: one
// ring per CPU queue of the kernel, each with Depth entries registered,
// and one goroutine per ring that reaps a request, answers it and commits
// the reply together with the fetch of the next. Requests that may wait
// long (FSYNC, FLUSH, ...) are answered on goroutines of their own, so
// that the others on their queue do not wait behind them.
//
// The /dev/fuse reader (go-fuse's server) still serves INIT, FORGET and
// INTERRUPT, which the kernel does not send through the rings, and stays
// the way out at unmount.
type Transport struct {
	devFd     int
	queues    []*queue
	done      sync.WaitGroup // the queues' goroutines
	answering sync.WaitGroup // requests answered off them

	requests atomic.Uint64
	async    atomic.Uint64

	onFailure func(error)
	failOnce  sync.Once
}

type queue struct {
	t     *Transport
	qid   uint16
	devFd int
	r     *ring
	buf   []byte // entries' headers and payloads, mapped
	ents  []entry
	h     Handler
	live  int // entries registered and not ended; the reaping goroutine's
	err   error

	// Entries answered off the queue's goroutine, waiting for it to
	// commit them (under r.mu); answerAndCommit wakes the goroutine by a
	// write to wakeFd, an eventfd it keeps a read queued on.
	finished []int
	wakeFd   int
	wakeBuf  [8]byte
}

// entry is one registered request slot: the kernel writes a request into
// its header and payload, and reads the reply from them.
type entry struct {
	commitID uint64 // of the request answered off the queue's goroutine
	header   []byte
	payload  []byte
	iov      [2]unix.Iovec
	in       [3][]byte // the handler's views of the request and reply,
	out      [2][]byte // kept here so that a request allocates none
}

// Start registers Depth entries on every queue of the connection devFd
// (a /dev/fuse descriptor, after INIT negotiated FUSE_OVER_IO_URING)
// and serves them with h until the connection ends. The Transport owns
// devFd from then on, also when Start fails: Wait closes it.
func Start(devFd int, h Handler, c Config) (*Transport, error) {
	c.PayloadSize = max(c.PayloadSize, 8192)
	t := &Transport{devFd: devFd, onFailure: c.OnFailure}
	n, err := possibleCPUs()
	if err != nil {
		t.closeQueues()
		return nil, err
	}
	if c.Depth <= 0 {
		// Each entry's payload is max_write (1 MiB by default), resident
		// once used: 8 per queue, fewer on machines with many CPUs.
		c.Depth = min(8, max(2, 64/n))
	}
	for qid := 0; qid < n; qid++ {
		q, err := newQueue(t, uint16(qid), devFd, h, c)
		if err != nil {
			t.closeQueues()
			return nil, err
		}
		t.queues = append(t.queues, q)
	}
	// Each queue registers its entries from its own thread (see serve);
	// the kernel switches the connection to the rings once every queue
	// has one.
	started := make(chan error, len(t.queues))
	for _, q := range t.queues {
		t.done.Add(1)
		go q.serve(started)
	}
	var errs []error
	for range t.queues {
		errs = append(errs, <-started)
	}
	if err := errors.Join(errs...); err != nil {
		// Queues that did register end when the connection does.
		go func() { _ = t.Wait() }()
		return nil, err
	}
	return t, nil
}

// Wait blocks until the connection has ended and every queue has stopped,
// then frees the rings and closes the descriptor. It returns the failures
// of queues that stopped on one rather than on the connection's end.
func (t *Transport) Wait() error {
	t.done.Wait()
	t.answering.Wait()
	var errs []error
	for _, q := range t.queues {
		errs = append(errs, q.err)
	}
	t.closeQueues()
	return errors.Join(errs...)
}

// Counters returns the running totals.
func (t *Transport) Counters() Counters {
	return Counters{Requests: t.requests.Load(), Async: t.async.Load()}
}

func (t *Transport) closeQueues() {
	for _, q := range t.queues {
		q.close()
	}
	t.queues = nil
	if t.devFd >= 0 {
		_ = unix.Close(t.devFd)
		t.devFd = -1
	}
}

func newQueue(t *Transport, qid uint16, devFd int, h Handler, c Config) (*queue, error) {
	// Every entry has at most one SQE in flight, and one CQE; so has the
	// eventfd read.
	r, err := newRing(uint32(c.Depth + 1))
	if err != nil {
		return nil, err
	}
	q := &queue{t: t, qid: qid, devFd: devFd, r: r, h: h, wakeFd: -1}
	q.wakeFd, err = unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		q.close()
		return nil, fmt.Errorf("uring: eventfd: %w", err)
	}
	slot := headerSize + 512 - headerSize%512 // keeps payloads page-aligned below
	payload := (c.PayloadSize + 4095) &^ 4095
	q.buf, err = unix.Mmap(-1, 0, c.Depth*(payload+slot), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		q.close()
		return nil, fmt.Errorf("uring: map buffers: %w", err)
	}
	q.ents = make([]entry, c.Depth)
	for i := range q.ents {
		e := &q.ents[i]
		e.payload = q.buf[i*payload : (i+1)*payload : (i+1)*payload]
		h := c.Depth*payload + i*slot
		e.header = q.buf[h : h+headerSize : h+headerSize]
		e.iov[0] = unix.Iovec{Base: &e.header[0]}
		e.iov[0].SetLen(len(e.header))
		e.iov[1] = unix.Iovec{Base: &e.payload[0]}
		e.iov[1].SetLen(len(e.payload))
	}
	return q, nil
}

func (q *queue) close() {
	if q.wakeFd >= 0 {
		_ = unix.Close(q.wakeFd)
		q.wakeFd = -1
	}
	if q.r != nil {
		q.r.close()
		q.r = nil
	}
	if q.buf != nil {
		_ = unix.Munmap(q.buf)
		q.buf = nil
	}
}

// register hands all entries to the kernel, which completes each when a
// request has been written into it. A refusal (an old kernel, a
// connection without io_uring) completes at once, so it is reaped here
// and returned as the error; an entry that already holds a request (the
// kernel may write one before this returns) is returned with the other
// completions reaped, for serve to answer.
func (q *queue) register() ([]cqe, error) {
	q.r.mu.Lock()
	for i := range q.ents {
		q.pushCmd(i, cmdRegister, 0)
	}
	q.armWake()
	n := q.r.takeUnsubmitted()
	q.r.mu.Unlock()
	if err := q.r.enter(n, false); err != nil {
		return nil, fmt.Errorf("uring: register queue %d: %w", q.qid, err)
	}
	q.live = len(q.ents)
	var errs []error
	var arrived []cqe
	for _, c := range q.r.reap(nil) {
		switch {
		case c.res >= 0:
			arrived = append(arrived, c)
		case c.userData == wakeTag:
			errs = append(errs, fmt.Errorf("uring: queue %d: read of its eventfd: %w", q.qid, syscall.Errno(-c.res)))
		default:
			q.live--
			errs = append(errs, fmt.Errorf("uring: register queue %d entry %d: %w", q.qid, c.userData, syscall.Errno(-c.res)))
		}
	}
	return arrived, errors.Join(errs...)
}

// pushCmd queues a FUSE command for entry i; the caller holds q.r.mu.
func (q *queue) pushCmd(i int, cmd uint32, commitID uint64) {
	e := &q.ents[i]
	q.r.push(func(sqe []byte) {
		sqe[sqeOpcode] = opUringCmd
		le := binary.LittleEndian
		le.PutUint32(sqe[sqeFd:], uint32(q.devFd))
		le.PutUint32(sqe[sqeCmdOp:], cmd)
		if cmd == cmdRegister {
			le.PutUint64(sqe[sqeAddr:], uint64(uintptr(unsafe.Pointer(&e.iov[0]))))
			le.PutUint32(sqe[sqeLen:], uint32(len(e.iov)))
		}
		le.PutUint64(sqe[sqeUserData:], uint64(i))
		le.PutUint64(sqe[sqeCmd+8:], commitID)
		le.PutUint16(sqe[sqeCmd+16:], q.qid)
	})
}

// serve registers the queue's entries, reports on started, then reaps
// requests and answers them until every entry has ended.
//
// It holds one thread, which alone submits the queue's FUSE commands:
// the kernel writes the next request into an entry by task work of the
// thread that submitted the entry's command, so a command submitted from
// a thread that then blocks (in a system call, or on this very mount, as
// the daemon's own probes do) would hold requests back, or deadlock.
// Other goroutines hand entries back through finished and wake the
// thread through an eventfd (answerAndCommit).
func (q *queue) serve(started chan<- error) {
	defer q.t.done.Done()
	// The thread is pinned below and never unlocked: it ends with the
	// goroutine instead of going back to the runtime pinned.
	runtime.LockOSThread()
	// The kernel queues a request on the queue of its caller's CPU, and
	// the caller sleeps until the answer: this thread runs best there,
	// next to the request's data. (Where the CPU is not allowed, it runs
	// wherever the scheduler puts it.)
	var set unix.CPUSet
	set.Set(int(q.qid))
	_ = unix.SchedSetaffinity(0, &set)
	arrived, err := q.register()
	started <- err
	if err != nil && q.live == 0 {
		return
	}
	q.handle(arrived)
	var cqes []cqe
	for q.live > 0 {
		q.r.mu.Lock()
		n := q.r.takeUnsubmitted()
		q.r.mu.Unlock()
		if err := q.r.enter(n, true); err != nil {
			q.fail(fmt.Errorf("uring: queue %d: %w", q.qid, err))
			return
		}
		cqes = q.r.reap(cqes[:0])
		q.handle(cqes)
	}
}

// handle acts on completions: a request written into an entry is
// answered (here, or off this goroutine when it may wait), an entry the
// kernel ended is dropped, and the eventfd's wake-up sends the commits
// of the entries answered elsewhere.
func (q *queue) handle(cqes []cqe) {
	for _, c := range cqes {
		if c.userData == wakeTag {
			q.r.mu.Lock()
			for _, i := range q.finished {
				q.pushCmd(i, cmdCommitAndFetch, q.ents[i].commitID)
			}
			q.finished = q.finished[:0]
			q.armWake()
			q.r.mu.Unlock()
			continue
		}
		i := int(c.userData)
		if c.res < 0 {
			// The connection ended (ENOTCONN, ECONNABORTED at
			// unmount or abort), or the kernel refused the entry.
			q.live--
			errno := syscall.Errno(-c.res)
			switch errno {
			case syscall.ENOTCONN, syscall.ECONNABORTED, syscall.ENODEV, syscall.ECANCELED:
			default:
				q.fail(fmt.Errorf("uring: queue %d entry %d: %w", q.qid, i, errno))
			}
			continue
		}
		e := &q.ents[i]
		if mayWait(binary.LittleEndian.Uint32(e.header[hdrInOut+4:])) {
			q.t.async.Add(1)
			q.t.answering.Add(1)
			go q.answerAndCommit(i)
			continue
		}
		commitID := q.answer(e)
		q.r.mu.Lock()
		q.pushCmd(i, cmdCommitAndFetch, commitID)
		q.r.mu.Unlock()
	}
}

// fail records the queue's first failure and reports the transport's
// first to OnFailure. Only the queue's goroutine calls it.
func (q *queue) fail(err error) {
	if q.err == nil {
		q.err = err
	}
	if q.t.onFailure != nil {
		q.t.failOnce.Do(func() { go q.t.onFailure(err) })
	}
}

// answerAndCommit answers entry i off the queue's goroutine and hands it
// back to that goroutine for the commit, waking it through the eventfd
// it reads.
func (q *queue) answerAndCommit(i int) {
	defer q.t.answering.Done()
	e := &q.ents[i]
	e.commitID = q.answer(e)
	q.r.mu.Lock()
	q.finished = append(q.finished, i)
	q.r.mu.Unlock()
	one := [8]byte{1}
	// A failure leaves the entry for the next wake-up; the eventfd's
	// counter cannot overflow from these.
	_, _ = unix.Write(q.wakeFd, one[:])
}

// armWake queues a read of the eventfd that answerAndCommit writes; its
// completion (wakeTag) wakes the queue's goroutine. The caller holds
// q.r.mu.
func (q *queue) armWake() {
	q.r.push(func(sqe []byte) {
		le := binary.LittleEndian
		sqe[sqeOpcode] = opRead
		le.PutUint32(sqe[sqeFd:], uint32(q.wakeFd))
		le.PutUint64(sqe[sqeAddr:], uint64(uintptr(unsafe.Pointer(&q.wakeBuf[0]))))
		le.PutUint32(sqe[sqeLen:], uint32(len(q.wakeBuf)))
		le.PutUint64(sqe[sqeUserData:], wakeTag)
	})
}

// answer serves the request in e and writes the reply into it; it
// returns the commit ID the kernel gave the request.
func (q *queue) answer(e *entry) uint64 {
	le := binary.LittleEndian
	hdr := e.header
	commitID := le.Uint64(hdr[hdrCommitID:])
	payloadSz := int(le.Uint32(hdr[hdrPayloadSz:]))
	total := int(le.Uint32(hdr[hdrInOut:]))
	unique := le.Uint64(hdr[hdrInOut+8:])
	opSz := total - inHeaderSize - payloadSz
	var n int
	status := fuse.EIO
	if opSz >= 0 && opSz <= 128 && payloadSz <= len(e.payload) {
		// The reply header goes to in_out; every reply argument, the
		// per-op one included, to the payload.
		e.in = [3][]byte{hdr[hdrInOut : hdrInOut+inHeaderSize], hdr[hdrOpIn : hdrOpIn+opSz], e.payload[:payloadSz]}
		e.out = [2][]byte{hdr[hdrInOut : hdrInOut+outHeaderSize], e.payload}
		n, status = q.h(e.in[:], e.out[:])
	}
	q.t.requests.Add(1)
	if n < outHeaderSize {
		// Unparsable, or no reply (which no request sent through the
		// rings expects): the kernel still needs one to free the entry.
		if status.Ok() {
			status = fuse.ENOSYS
		}
		le.PutUint32(hdr[hdrInOut:], outHeaderSize)
		le.PutUint32(hdr[hdrInOut+4:], uint32(-int32(status)))
		le.PutUint64(hdr[hdrInOut+8:], unique)
		n = outHeaderSize
	}
	le.PutUint32(hdr[hdrPayloadSz:], uint32(n-outHeaderSize))
	return commitID
}

// mayWait reports whether a request may wait long for something other
// than the CPU: a commit to the device, or a lock.
func mayWait(opcode uint32) bool {
	switch opcode {
	case opFsync, opFsyncdir, opFlush, opSetlkw:
		return true
	}
	return false
}

// possibleCPUs is the kernel's count of queues: one per possible CPU.
func possibleCPUs() (int, error) {
	raw, err := os.ReadFile("/sys/devices/system/cpu/possible")
	if err != nil {
		return 0, fmt.Errorf("uring: %w", err)
	}
	list := strings.TrimSpace(string(raw))
	n := 0
	for _, part := range strings.Split(list, ",") {
		lo, hi, found := strings.Cut(part, "-")
		first, err1 := strconv.Atoi(lo)
		last, err2 := first, error(nil)
		if found {
			last, err2 = strconv.Atoi(hi)
		}
		if err1 != nil || err2 != nil || last < first {
			return 0, fmt.Errorf("uring: cannot parse possible CPUs %q", list)
		}
		n = max(n, last+1)
	}
	return n, nil
}

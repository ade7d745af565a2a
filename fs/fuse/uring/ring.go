package uring

import (
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The io_uring ABI (include/uapi/linux/io_uring.h); x/sys/unix has the
// system call numbers but not the rest.
const (
	setupSQE128 = 1 << 10 // 128-byte SQEs: FUSE's command does not fit in 64

	enterGetEvents = 1 << 0
	enterNoIOWait  = 1 << 7 // 6.15+: a blocked wait is not counted as iowait

	featSingleMmap = 1 << 0
	featNoIOWait   = 1 << 17

	offSQRing = 0
	offSQEs   = 0x10000000

	opUringCmd = 46

	sqeSize = 128
	cqeSize = 16
)

type sqOffsets struct {
	head, tail, ringMask, ringEntries, flags, dropped, array, resv1 uint32
	userAddr                                                        uint64
}

type cqOffsets struct {
	head, tail, ringMask, ringEntries, overflow, cqes, flags, resv1 uint32
	userAddr                                                        uint64
}

type params struct {
	sqEntries, cqEntries, flags, sqThreadCPU, sqThreadIdle, features, wqFd uint32
	resv                                                                   [3]uint32
	sqOff                                                                  sqOffsets
	cqOff                                                                  cqOffsets
}

// ring is one io_uring instance with 128-byte SQEs. SQEs are queued under
// mu; only one goroutine reaps completions. (Which thread submits matters
// to FUSE: see queue.serve.)
type ring struct {
	fd     int
	mem    []byte // SQ and CQ rings (one mapping: IORING_FEAT_SINGLE_MMAP)
	sqeMem []byte

	sqHead, sqTail *uint32
	sqMask         uint32
	sqEntries      uint32
	sqArray        unsafe.Pointer

	cqHead, cqTail *uint32
	cqMask         uint32
	cqes           unsafe.Pointer

	// waitFlags are the io_uring_enter flags of a blocking wait. A FUSE
	// server waits on its ring for requests most of its life; counted as
	// iowait (as the kernel does since 6.5), an idle mount shows its CPUs
	// in iowait and /proc/pressure/io "full", so it opts out where it can.
	waitFlags uintptr

	mu       sync.Mutex // orders SQE producers
	unsubmit uint32     // SQEs queued by push and not yet handed to the kernel; under mu
}

// cqe is a completion: the SQE's user data and its result.
type cqe struct {
	userData uint64
	res      int32
	flags    uint32
}

func newRing(entries uint32) (*ring, error) {
	var p params
	p.flags = setupSQE128
	fd, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, uintptr(entries), uintptr(unsafe.Pointer(&p)), 0)
	if errno != 0 {
		return nil, fmt.Errorf("io_uring_setup: %w", errno)
	}
	r := &ring{fd: int(fd), waitFlags: waitFlags(p.features)}
	if p.features&featSingleMmap == 0 {
		r.close()
		return nil, fmt.Errorf("io_uring: kernel without IORING_FEAT_SINGLE_MMAP")
	}
	size := max(p.sqOff.array+p.sqEntries*4, p.cqOff.cqes+p.cqEntries*cqeSize)
	mem, err := unix.Mmap(r.fd, offSQRing, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		r.close()
		return nil, fmt.Errorf("io_uring: map rings: %w", err)
	}
	r.mem = mem
	sqes, err := unix.Mmap(r.fd, offSQEs, int(p.sqEntries)*sqeSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		r.close()
		return nil, fmt.Errorf("io_uring: map SQEs: %w", err)
	}
	r.sqeMem = sqes
	base := unsafe.Pointer(&mem[0])
	u32 := func(off uint32) *uint32 { return (*uint32)(unsafe.Add(base, off)) }
	r.sqHead, r.sqTail = u32(p.sqOff.head), u32(p.sqOff.tail)
	r.sqMask, r.sqEntries = *u32(p.sqOff.ringMask), p.sqEntries
	r.sqArray = unsafe.Add(base, p.sqOff.array)
	r.cqHead, r.cqTail = u32(p.cqOff.head), u32(p.cqOff.tail)
	r.cqMask = *u32(p.cqOff.ringMask)
	r.cqes = unsafe.Add(base, p.cqOff.cqes)
	return r, nil
}

// waitFlags returns the enter flags of a blocking wait on a ring whose
// kernel reports features.
func waitFlags(features uint32) uintptr {
	if features&featNoIOWait != 0 {
		return enterGetEvents | enterNoIOWait
	}
	return enterGetEvents
}

// push queues one SQE, filled in by fill over a zeroed 128-byte slot, for
// the next submit. The caller holds mu. The rings are sized so that every
// FUSE entry has at most one SQE outstanding, so the queue never fills.
func (r *ring) push(fill func(sqe []byte)) {
	tail := *r.sqTail
	if tail-atomic.LoadUint32(r.sqHead) >= r.sqEntries {
		panic("uring: submission queue full")
	}
	i := tail & r.sqMask
	sqe := r.sqeMem[i*sqeSize : (i+1)*sqeSize]
	clear(sqe)
	fill(sqe)
	*(*uint32)(unsafe.Add(r.sqArray, i*4)) = i
	atomic.StoreUint32(r.sqTail, tail+1)
	r.unsubmit++
}

// takeUnsubmitted returns the count of SQEs queued since the last call;
// the caller submits that many. The caller holds mu.
func (r *ring) takeUnsubmitted() uint32 {
	n := r.unsubmit
	r.unsubmit = 0
	return n
}

// enter submits toSubmit SQEs and, if wait, blocks until a completion is
// there. Interrupted calls are retried for what they had not done.
func (r *ring) enter(toSubmit uint32, wait bool) error {
	var minComplete, flags uintptr
	if wait {
		minComplete, flags = 1, r.waitFlags
	}
	for {
		n, _, errno := unix.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(r.fd), uintptr(toSubmit), minComplete, flags, 0, 0)
		if errno == 0 {
			toSubmit -= min(uint32(n), toSubmit)
			if toSubmit == 0 {
				return nil
			}
			continue
		}
		if errno == syscall.EINTR || errno == syscall.EAGAIN {
			continue
		}
		return fmt.Errorf("io_uring_enter: %w", errno)
	}
}

// reap appends the completions that have arrived to buf and returns it.
// Only one goroutine reaps.
func (r *ring) reap(buf []cqe) []cqe {
	head := *r.cqHead
	tail := atomic.LoadUint32(r.cqTail)
	for ; head != tail; head++ {
		c := (*cqe)(unsafe.Add(r.cqes, (head&r.cqMask)*cqeSize))
		buf = append(buf, *c)
	}
	atomic.StoreUint32(r.cqHead, head)
	return buf
}

func (r *ring) close() {
	if r.sqeMem != nil {
		_ = unix.Munmap(r.sqeMem)
		r.sqeMem = nil
	}
	if r.mem != nil {
		_ = unix.Munmap(r.mem)
		r.mem = nil
	}
	if r.fd >= 0 {
		_ = unix.Close(r.fd)
		r.fd = -1
	}
}

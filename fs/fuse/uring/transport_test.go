package uring

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// TestAnswerLayout feeds answer an entry as the kernel fills it (header in
// in_out, per-op argument in op_in, the rest in the payload) and checks
// what the handler sees and where the reply lands.
func TestAnswerLayout(t *testing.T) {
	le := binary.LittleEndian
	e := &entry{header: make([]byte, headerSize), payload: make([]byte, 8192)}
	opArg := bytes.Repeat([]byte{0xa1}, 24)
	name := []byte("file.txt\x00")
	le.PutUint32(e.header[hdrInOut:], uint32(inHeaderSize+len(opArg)+len(name)))
	le.PutUint32(e.header[hdrInOut+4:], 35) // CREATE
	le.PutUint64(e.header[hdrInOut+8:], 77)
	copy(e.header[hdrOpIn:], opArg)
	le.PutUint64(e.header[hdrCommitID:], 77)
	le.PutUint32(e.header[hdrPayloadSz:], uint32(len(name)))
	copy(e.payload, name)

	reply := bytes.Repeat([]byte{0x5c}, 100)
	var seen []byte
	q := &queue{t: &Transport{}, h: func(in, out [][]byte) (int, fuse.Status) {
		for _, b := range in {
			seen = append(seen, b...)
		}
		// An out header then 100 bytes of arguments, as a byte stream.
		hdr := make([]byte, outHeaderSize)
		le.PutUint32(hdr, uint32(outHeaderSize+len(reply)))
		le.PutUint64(hdr[8:], 77)
		n := copy(out[0], hdr)
		n += copy(out[1], reply)
		return n, fuse.OK
	}}
	if id := q.answer(e); id != 77 {
		t.Errorf("commit ID %d, want 77", id)
	}
	if len(seen) != inHeaderSize+len(opArg)+len(name) {
		t.Fatalf("the handler saw %d bytes, want %d", len(seen), inHeaderSize+len(opArg)+len(name))
	}
	if !bytes.Equal(seen[inHeaderSize:inHeaderSize+len(opArg)], opArg) || !bytes.Equal(seen[inHeaderSize+len(opArg):], name) {
		t.Errorf("the handler saw the arguments out of order: % x", seen[inHeaderSize:])
	}
	if got := le.Uint32(e.header[hdrPayloadSz:]); got != uint32(len(reply)) {
		t.Errorf("payload_sz %d, want %d: every reply argument goes to the payload", got, len(reply))
	}
	if !bytes.Equal(e.payload[:len(reply)], reply) {
		t.Errorf("the reply's arguments are not at the payload's start")
	}
	if got := le.Uint64(e.header[hdrInOut+8:]); got != 77 {
		t.Errorf("reply header unique %d, want 77", got)
	}
}

// TestAnswerRefusesBadLengths: a header whose lengths do not add up gets
// an EIO reply, not a handler call on garbage.
func TestAnswerRefusesBadLengths(t *testing.T) {
	le := binary.LittleEndian
	e := &entry{header: make([]byte, headerSize), payload: make([]byte, 4096)}
	le.PutUint32(e.header[hdrInOut:], inHeaderSize+200) // op_in holds 128 at most
	le.PutUint64(e.header[hdrInOut+8:], 9)
	called := false
	q := &queue{t: &Transport{}, h: func(in, out [][]byte) (int, fuse.Status) { called = true; return 0, fuse.OK }}
	q.answer(e)
	if called {
		t.Error("the handler was called")
	}
	if got := int32(le.Uint32(e.header[hdrInOut+4:])); got != -int32(fuse.EIO) {
		t.Errorf("reply error %d, want -EIO", got)
	}
	if got := le.Uint32(e.header[hdrPayloadSz:]); got != 0 {
		t.Errorf("payload_sz %d, want 0", got)
	}
}

func TestMayWait(t *testing.T) {
	for op, want := range map[uint32]bool{opFsync: true, opFsyncdir: true, opFlush: true, opSetlkw: true, 3: false, 16: false, 35: false} {
		if mayWait(op) != want {
			t.Errorf("mayWait(%d) = %v", op, !want)
		}
	}
}

// TestFailReportsOnce: a queue keeps its first failure, and the transport
// reports its first one once, whatever the number of queues that fail.
func TestFailReportsOnce(t *testing.T) {
	got := make(chan error, 4)
	tr := &Transport{onFailure: func(err error) { got <- err }}
	q1, q2 := &queue{t: tr}, &queue{t: tr}
	first := errors.New("first")
	q1.fail(first)
	q1.fail(errors.New("second"))
	q2.fail(errors.New("third"))
	if err := <-got; !errors.Is(err, first) {
		t.Errorf("OnFailure got %v, want the first failure", err)
	}
	select {
	case err := <-got:
		t.Errorf("OnFailure called again with %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	if !errors.Is(q1.err, first) || q2.err == nil {
		t.Errorf("queue errors %v, %v: each keeps its first", q1.err, q2.err)
	}
}

// TestAnswerAllocatesNothing: the transport's own part of a request
// allocates nothing (the decoder's part is go-fuse's).
func TestAnswerAllocatesNothing(t *testing.T) {
	le := binary.LittleEndian
	e := &entry{header: make([]byte, headerSize), payload: make([]byte, 4096)}
	le.PutUint32(e.header[hdrInOut:], inHeaderSize+16)
	le.PutUint64(e.header[hdrInOut+8:], 5)
	q := &queue{t: &Transport{}, h: func(in, out [][]byte) (int, fuse.Status) {
		copy(out[0], in[0][:outHeaderSize])
		return outHeaderSize + copy(out[1], in[1]), fuse.OK
	}}
	if n := testing.AllocsPerRun(1000, func() { q.answer(e) }); n != 0 {
		t.Errorf("answer allocates %.1f times per request, want 0", n)
	}
}

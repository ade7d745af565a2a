package journal

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"syscall"
	"testing"

	"github.com/smallfs/smallfs/accounting"
	"github.com/smallfs/smallfs/fs/device"
	"github.com/smallfs/smallfs/fs/format"
)

func TestAppendSyncReplay(t *testing.T) {
	dev := device.NewMem(1 << 20)
	opts := testOpts(512)
	j := mustOpen(t, dev, opts)
	rng := rand.New(rand.NewPCG(1, 1))
	for i := uint64(1); i <= 300; i++ {
		if seq := mustAppend(t, j, testTxn(i, rng, 6)); seq != i {
			t.Fatalf("seq %d, want %d", seq, i)
		}
		if i%7 == 0 {
			if err := j.Sync(i); err != nil {
				t.Fatal(err)
			}
			if j.Durable() < i {
				t.Fatalf("durable %d after Sync(%d)", j.Durable(), i)
			}
		}
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	pos, next := j.Mark()
	seqs, head, gotNext := replayAll(t, dev, opts)
	if !slices.Equal(seqs, seqRange(1, 300)) || head != pos || gotNext != next {
		t.Fatalf("replayed %d transactions, head %+v next %d; journal at %+v %d", len(seqs), head, gotNext, pos, next)
	}
	if _, err := j.Append(testTxn(301, rng, 0)); !errors.Is(err, ErrClosed) {
		t.Errorf("append after close: %v", err)
	}
	if err := j.Close(); !errors.Is(err, ErrClosed) {
		t.Errorf("second close: %v", err)
	}
}

func TestAppendRefusesBadInput(t *testing.T) {
	j := mustOpen(t, device.NewMem(1<<20), testOpts(64))
	if _, err := j.Append(nil); !errors.Is(err, ErrBadArgument) {
		t.Errorf("empty: %v", err)
	}
	if _, err := j.Append([]format.Record{format.DirentRec{Parent: 1, Ino: 2, Name: "a/b"}}); !errors.Is(err, format.ErrInvalid) {
		t.Errorf("bad record: %v", err)
	}
	if j.Last() != 0 {
		t.Errorf("refused appends took sequence numbers: last %d", j.Last())
	}
	if err := j.Sync(1); !errors.Is(err, ErrBadArgument) {
		t.Errorf("sync of the future: %v", err)
	}
	if _, err := Open(device.NewMem(1<<20), Options{BlockSize: 1000, Region: format.BlockRange{Start: 0, Len: 2}}); !errors.Is(err, ErrBadArgument) {
		t.Errorf("bad options: %v", err)
	}
	if _, err := Open(device.NewMem(1<<16), testOpts(512)); !errors.Is(err, ErrBadArgument) {
		t.Errorf("region past the device: %v", err)
	}
}

func TestReplayStopsAtTornChunk(t *testing.T) {
	dev := device.NewMem(1 << 20)
	opts := testOpts(256)
	j := mustOpen(t, dev, opts)
	rng := rand.New(rand.NewPCG(2, 2))
	var marks []Position
	for i := uint64(1); i <= 5; i++ {
		mustAppend(t, j, testTxn(i, rng, 30))
		pos, _ := j.Mark() // one chunk per transaction
		marks = append(marks, pos)
	}
	j.Sync(5)
	// Damage the third chunk's payload (its padding is not covered).
	at := (int64(opts.Region.Start)+int64(marks[1].Block))*testBS + format.ChunkHeaderSize + 30
	dev.Bytes()[at] ^= 0xff
	seqs, head, next := replayAll(t, dev, opts)
	if !slices.Equal(seqs, []uint64{1, 2}) || head != marks[1] || next != 3 {
		t.Fatalf("replayed %v head %+v next %d", seqs, head, next)
	}
}

// TestAbandonedRunIsNotReplayed: after a crash tore chunk A but left the
// chunk B after it intact, replay stops at A. The next run rewrites A's
// place with A' of the same size; a crash then must not resurrect B, which
// belonged to the abandoned history. The checksum chain sees to it.
func TestAbandonedRunIsNotReplayed(t *testing.T) {
	dev := device.NewMem(1 << 20)
	opts := testOpts(256)
	j := mustOpen(t, dev, opts)
	rng := rand.New(rand.NewPCG(3, 3))
	mustAppend(t, j, testTxn(1, rng, 0))
	j.Mark()
	mustAppend(t, j, testTxn(2, rng, 0)) // chunk A
	posB, _ := j.Mark()
	mustAppend(t, j, testTxn(3, rng, 0)) // chunk B
	j.Sync(3)
	a := (int64(opts.Region.Start) + int64(posB.Block) - 1) * testBS
	dev.Bytes()[a+format.ChunkHeaderSize] ^= 1
	seqs, head, next := replayAll(t, dev, opts)
	if !slices.Equal(seqs, []uint64{1}) {
		t.Fatalf("after tearing A: %v", seqs)
	}
	o2 := opts
	o2.Head, o2.NextSeq, o2.Tail = head, next, opts.Head.Block
	j2 := mustOpen(t, dev, o2)
	mustAppend(t, j2, testTxn(2, rng, 0)) // A', same size as A
	if p, _ := j2.Mark(); p != (Position{Block: posB.Block, Prev: p.Prev}) {
		t.Fatalf("A' not the size of A: next chunk at %d, B at %d", p.Block, posB.Block)
	}
	j2.Sync(2)
	seqs, _, next = replayAll(t, dev, opts)
	if !slices.Equal(seqs, []uint64{1, 2}) || next != 3 {
		t.Fatalf("stale chunk B replayed: %v next %d", seqs, next)
	}
}

func TestWrapAroundAndRelease(t *testing.T) {
	dev := device.NewMem(1 << 20)
	opts := testOpts(24)
	j := mustOpen(t, dev, opts)
	rng := rand.New(rand.NewPCG(4, 4))
	start, startSeq := opts.Head, uint64(1)
	wraps := 0
	for i := uint64(1); i <= 400; i++ {
		before, _ := j.Mark()
		if _, err := j.Append(testTxn(i, rng, 8)); errors.Is(err, ErrLogFull) {
			// Checkpoint: everything appended so far is covered.
			if err := j.Sync(i - 1); err != nil {
				t.Fatal(err)
			}
			start, startSeq = j.Mark()
			if err := j.Release(start); err != nil {
				t.Fatal(err)
			}
			mustAppend(t, j, testTxn(i, rng, 8))
		} else if err != nil {
			t.Fatal(err)
		}
		if after, _ := j.Mark(); after.Block < before.Block {
			wraps++
		}
		j.Sync(i)
		o := opts
		o.Head, o.NextSeq = start, startSeq
		seqs, _, next := replayAll(t, dev, o)
		if len(seqs) == 0 || seqs[0] != startSeq || next != i+1 {
			t.Fatalf("after %d: replay from %d gave %v, next %d", i, startSeq, seqs, next)
		}
		expectRun(t, seqs, startSeq)
	}
	if wraps < 10 {
		t.Fatalf("only %d wraps", wraps)
	}
}

func TestLogFull(t *testing.T) {
	dev := device.NewMem(1 << 20)
	j := mustOpen(t, dev, testOpts(16))
	rng := rand.New(rand.NewPCG(5, 5))
	var last uint64
	for i := uint64(1); ; i++ {
		seq, err := j.Append(testTxn(i, rng, 3))
		if errors.Is(err, ErrLogFull) {
			break
		}
		if err != nil || i > 1000 {
			t.Fatalf("append %d: %v", i, err)
		}
		last = seq
		j.Mark()
	}
	used, capacity := j.Usage()
	if used > capacity || capacity != 15 {
		t.Fatalf("usage %d of %d", used, capacity)
	}
	if j.Last() != last {
		t.Fatalf("refused append changed the last sequence: %d", j.Last())
	}
	if err := j.Sync(last); err != nil {
		t.Fatal(err)
	}
	seqs, _, _ := replayAll(t, dev, testOpts(16))
	if !slices.Equal(seqs, seqRange(1, last)) {
		t.Fatalf("replayed %v, want 1..%d", seqs, last)
	}
	pos, _ := j.Mark()
	if err := j.Release(pos); err != nil {
		t.Fatal(err)
	}
	if _, err := j.Append(testTxn(last+1, rng, 3)); err != nil {
		t.Fatalf("after release: %v", err)
	}
	if err := j.Release(Position{Block: (pos.Block + 8) % 16}); !errors.Is(err, ErrBadArgument) {
		t.Errorf("release past the head: %v", err)
	}
}

func TestTxnTooLarge(t *testing.T) {
	j := mustOpen(t, device.NewMem(1<<20), testOpts(16))
	big := []format.Record{format.InlineRec{Ino: 1, Data: make([]byte, 8*testBS)}}
	if _, err := j.Append(big); !errors.Is(err, ErrTxnTooLarge) {
		t.Fatalf("%v", err)
	}
	// A transaction of several blocks, larger than the chunk size, works.
	j2 := mustOpen(t, device.NewMem(1<<20), Options{Region: format.BlockRange{Start: 16, Len: 64}, BlockSize: testBS, NextSeq: 1, ChunkSize: 600})
	mid := []format.Record{format.InlineRec{Ino: 1, Data: make([]byte, 4*testBS)}}
	if _, err := j2.Append(mid); err != nil {
		t.Fatal(err)
	}
	if err := j2.Sync(1); err != nil {
		t.Fatal(err)
	}
}

func TestSyncFailureIsSticky(t *testing.T) {
	f := device.NewFaulty(device.NewMem(1 << 20))
	j := mustOpen(t, f, testOpts(64))
	rng := rand.New(rand.NewPCG(6, 6))
	mustAppend(t, j, testTxn(1, rng, 0))
	f.FailNth(device.OpWrite, 1, syscall.EIO)
	err := j.Sync(1)
	if !errors.Is(err, ErrFailed) || !errors.Is(err, syscall.EIO) {
		t.Fatalf("sync: %v", err)
	}
	if _, err := j.Append(testTxn(2, rng, 0)); !errors.Is(err, ErrFailed) {
		t.Errorf("append after failure: %v", err)
	}
	if j.Durable() != 0 {
		t.Errorf("durable %d after a failed commit", j.Durable())
	}
}

func TestOnDurable(t *testing.T) {
	var got []uint64
	opts := testOpts(64)
	opts.OnDurable = func(seq uint64) { got = append(got, seq) }
	j := mustOpen(t, device.NewMem(1<<20), opts)
	rng := rand.New(rand.NewPCG(7, 7))
	for i := uint64(1); i <= 6; i++ {
		mustAppend(t, j, testTxn(i, rng, 0))
		if i%2 == 0 {
			j.Sync(i)
		}
	}
	if !slices.Equal(got, []uint64{2, 4, 6}) {
		t.Fatalf("OnDurable saw %v", got)
	}
}

// TestReplayScan: ReplayScan replays what Replay does, the common records
// by pointer.
func TestReplayScan(t *testing.T) {
	dev := device.NewMem(1 << 20)
	opts := testOpts(512)
	j := mustOpen(t, dev, opts)
	rng := rand.New(rand.NewPCG(2, 2))
	for i := uint64(1); i <= 200; i++ {
		mustAppend(t, j, testTxn(i, rng, 4))
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	var want [][]byte
	collect := func(out *[][]byte) func(uint64, []format.Record) error {
		return func(_ uint64, txn []format.Record) error {
			*out = append(*out, format.AppendTxn(nil, txn)) // the bytes, not the records
			return nil
		}
	}
	h1, n1, err := Replay(dev, opts, collect(&want))
	if err != nil {
		t.Fatal(err)
	}
	var got [][]byte
	h2, n2, err := ReplayScan(dev, opts, func(seq uint64, txn []format.Record) error {
		if _, ok := txn[0].(*format.InodeRec); !ok {
			return fmt.Errorf("transaction %d: %T, want *format.InodeRec", seq, txn[0])
		}
		return collect(&got)(seq, txn)
	})
	if err != nil {
		t.Fatal(err)
	}
	if h1 != h2 || n1 != n2 || len(got) != 200 || !slices.EqualFunc(got, want, bytes.Equal) {
		t.Fatalf("ReplayScan: %d transactions, head %+v next %d; Replay: %d, %+v, %d", len(got), h2, n2, len(want), h1, n1)
	}
}

// TestFailStopsTheLog: after Fail, Sync and Append fail with ErrFailed
// wrapping the cause and the device sees no more I/O, Close included.
func TestFailStopsTheLog(t *testing.T) {
	f := device.NewFaulty(device.NewMem(1 << 20))
	j := mustOpen(t, f, testOpts(64))
	rng := rand.New(rand.NewPCG(9, 9))
	mustAppend(t, j, testTxn(1, rng, 0))
	if err := j.Sync(1); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, j, testTxn(2, rng, 0))
	ops := f.Count(device.OpAny)
	cause := fmt.Errorf("checkpoint: %w", syscall.EIO)
	j.Fail(cause)
	if err := j.Sync(2); !errors.Is(err, ErrFailed) || !errors.Is(err, syscall.EIO) {
		t.Errorf("sync after Fail: %v", err)
	}
	if _, err := j.Append(testTxn(3, rng, 0)); !errors.Is(err, ErrFailed) {
		t.Errorf("append after Fail: %v", err)
	}
	if err := j.Close(); !errors.Is(err, ErrFailed) {
		t.Errorf("close after Fail: %v", err)
	}
	if n := f.Count(device.OpAny) - ops; n != 0 {
		t.Errorf("%d device operations after Fail", n)
	}
	if j.Durable() != 1 {
		t.Errorf("durable %d, want 1", j.Durable())
	}
}

// TestFailedCommitFreesBuffers: the chunk buffers of a commit that failed
// are given back like those of one that succeeded: once the journal is
// closed, none is left counted as live.
func TestFailedCommitFreesBuffers(t *testing.T) {
	live := func() int64 {
		l, _ := accounting.Default.Snapshot().Layer("journal")
		ty, _ := l.Type("chunk-buffer")
		return ty.Bytes
	}
	before := live()
	f := device.NewFaulty(device.NewMem(1 << 20))
	j := mustOpen(t, f, testOpts(64))
	rng := rand.New(rand.NewPCG(10, 10))
	for i := uint64(1); i <= 3; i++ {
		mustAppend(t, j, testTxn(i, rng, 2))
	}
	f.FailNth(device.OpFlush, f.Count(device.OpFlush)+1, syscall.EIO)
	if err := j.Sync(3); !errors.Is(err, ErrFailed) {
		t.Fatalf("sync: %v", err)
	}
	_ = j.Close()
	if after := live(); after != before {
		t.Errorf("%d bytes of chunk buffers live after Close, %d before Open", after, before)
	}
}

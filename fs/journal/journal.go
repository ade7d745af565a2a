package journal

import (
	"fmt"
	"math/rand/v2"
	"sync"

	"github.com/smallfs/smallfs/fs/device"
	"github.com/smallfs/smallfs/fs/format"
)

// Journal appends transactions to the circular log region and makes them
// durable with group commit. Safe for concurrent use.
type Journal struct {
	dev       device.Device
	opts      Options
	bs        int
	blocks    uint64 // region length in blocks
	maxBlocks uint64 // largest chunk that fits an empty log wherever the head is
	nonce     uint32

	mu   sync.Mutex
	cond sync.Cond // broadcast when a commit ends or durable advances

	open     []byte // open chunk: header room, then encoded transactions
	openSeq  uint64 // sequence of the first transaction in open
	openTxns uint32
	nextSeq  uint64

	sealed []sealedChunk // sealed, not yet written, in log order
	next   uint64        // block where the next sealed chunk goes
	prev   uint32        // chain value after the last sealed chunk
	tail   uint64        // oldest block still needed
	used   uint64        // blocks from tail to next, wasted wrap space included

	durable uint64 // every transaction <= durable is on disk
	syncing bool   // a commit is writing; others wait on cond
	waiting int    // Sync callers blocked on cond (tests watch it)
	spare   [][]byte
	err     error // sticky: ErrFailed or ErrClosed
}

type sealedChunk struct {
	block   uint64
	data    []byte // whole blocks
	lastSeq uint64 // highest transaction in it (for a wrap chunk: the one before)
	wrap    bool
}

// Open prepares to append after replay: opts.Head and opts.NextSeq are
// what Replay returned, opts.Tail the head of the newest durable superblock.
func Open(dev device.Device, opts Options) (*Journal, error) {
	if err := opts.fill(); err != nil {
		return nil, err
	}
	bs := int64(opts.BlockSize)
	if end := opts.Region.End(); end < opts.Region.Start || end > uint64(dev.Size()/bs) {
		return nil, fmt.Errorf("journal: region %d+%d beyond a device of %d blocks: %w", opts.Region.Start, opts.Region.Len, dev.Size()/bs, ErrBadArgument)
	}
	L := opts.Region.Len
	j := &Journal{
		dev:       dev,
		opts:      opts,
		bs:        int(bs),
		blocks:    L,
		maxBlocks: L/2 - 1,
		nonce:     newNonce(),
		nextSeq:   opts.NextSeq,
		openSeq:   opts.NextSeq,
		next:      opts.Head.Block,
		prev:      opts.Head.Prev,
		tail:      opts.Tail,
		used:      (opts.Head.Block + L - opts.Tail) % L,
		durable:   opts.NextSeq - 1,
	}
	j.cond.L = &j.mu
	j.open = j.newBuffer()
	opts.Logger.WithField("region", fmt.Sprintf("%d+%d", opts.Region.Start, L)).
		WithField("head", opts.Head.Block).WithField("tail", opts.Tail).WithField("next_seq", opts.NextSeq).
		Debug("journal open")
	return j, nil
}

// newNonce is a random nonce other than 0, which superblocks use for
// "no writer recorded".
func newNonce() uint32 {
	for {
		if n := rand.Uint32(); n != 0 {
			return n
		}
	}
}

// Nonce is the nonce this journal's chunks carry: the volume records it
// in the superblocks it writes (format.Superblock.LogWriter), so replay
// knows this instance's later commits for witnesses of damage.
func (j *Journal) Nonce() uint32 { return j.nonce }

// Append encodes txn into the open chunk and returns its sequence number.
// It does no I/O: the volume calls it under its metadata lock, in the order
// it applied the changes. The transaction is durable after Sync(seq).
// Records are validated first; a bad one gives an error wrapping
// format.ErrInvalid and appends nothing.
func (j *Journal) Append(txn []format.Record) (uint64, error) {
	if len(txn) == 0 {
		return 0, fmt.Errorf("journal: empty transaction: %w", ErrBadArgument)
	}
	for _, r := range txn {
		if err := format.Validate(r); err != nil {
			return 0, fmt.Errorf("journal: %w", err)
		}
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.err != nil {
		return 0, j.err
	}
	mark := len(j.open)
	j.open = j.grown(format.AppendTxn(j.open, txn))
	if j.openTxns > 0 && (len(j.open)-format.ChunkHeaderSize > j.opts.ChunkSize || j.chunkBlocks(len(j.open)) > j.maxBlocks) {
		// Too big together: seal what was open, start over with txn alone.
		enc := append([]byte(nil), j.open[mark:]...)
		j.open = j.open[:mark]
		j.seal()
		mark = len(j.open)
		j.open = j.grown(append(j.open, enc...))
	}
	k := j.chunkBlocks(len(j.open))
	if k > j.maxBlocks {
		j.open = j.open[:mark]
		return 0, fmt.Errorf("journal: transaction needs %d blocks, the log allows %d: %w", k, j.maxBlocks, ErrTxnTooLarge)
	}
	if cost := j.placeCost(k); cost > j.free() {
		j.open = j.open[:mark]
		return 0, fmt.Errorf("journal: %d blocks needed, %d free: %w", cost, j.free(), ErrLogFull)
	}
	seq := j.nextSeq
	j.nextSeq++
	j.openTxns++
	ctrAppends.Inc()
	return seq, nil
}

// grown accounts for a reallocation of the open buffer by append.
func (j *Journal) grown(b []byte) []byte {
	if old := cap(j.open); cap(b) != old {
		acctBuffers.Resize(int64(cap(b) - old))
	}
	return b
}

// chunkBlocks is the blocks a chunk whose buffer (header included) is n
// bytes takes on disk.
func (j *Journal) chunkBlocks(n int) uint64 {
	return uint64(format.ChunkSize(n-format.ChunkHeaderSize, j.opts.BlockSize) / j.bs)
}

// placeCost is the blocks a chunk of k blocks uses when placed at next: k,
// plus the rest of the region if it must wrap to the start.
func (j *Journal) placeCost(k uint64) uint64 {
	if j.next+k <= j.blocks {
		return k
	}
	return j.blocks - j.next + k
}

// free is the blocks that can still be used; one is kept back so that a
// full log never has head == tail, which means empty.
func (j *Journal) free() uint64 { return j.blocks - 1 - j.used }

// seal closes the open chunk: it places it (after a wrap chunk when it
// would cross the end of the region), computes its checksum and queues it.
func (j *Journal) seal() {
	if j.openTxns == 0 {
		return
	}
	// The first chunk the next commit will write says so: replay knows
	// the commit before it had flushed.
	var flags uint16
	if j.opts.DataSums && len(j.sealed) == 0 {
		flags = format.ChunkFlagCommit
	}
	k := j.chunkBlocks(len(j.open))
	if j.next+k > j.blocks {
		w := j.newBuffer()[:j.bs]
		clear(w)
		crc := format.SealChunk(w[:format.ChunkHeaderSize], format.ChunkHeader{Flags: format.ChunkFlagWrap | flags, Seq: j.openSeq, Prev: j.prev, Nonce: j.nonce})
		flags = 0
		j.sealed = append(j.sealed, sealedChunk{block: j.next, data: w, lastSeq: j.openSeq - 1, wrap: true})
		j.used += j.blocks - j.next
		j.next, j.prev = 0, crc
	}
	n := len(j.open)
	crc := format.SealChunk(j.open, format.ChunkHeader{Flags: flags, Seq: j.openSeq, Txns: j.openTxns, Prev: j.prev, Nonce: j.nonce})
	size := int(k) * j.bs
	j.open = j.grown(append(j.open, make([]byte, size-n)...))
	j.sealed = append(j.sealed, sealedChunk{block: j.next, data: j.open, lastSeq: j.openSeq + uint64(j.openTxns) - 1})
	j.used += k
	j.next = (j.next + k) % j.blocks
	j.prev = crc
	j.open = j.newBuffer()
	j.openSeq, j.openTxns = j.nextSeq, 0
}

// newBuffer returns an empty chunk buffer with header room, reusing one
// written earlier when possible.
func (j *Journal) newBuffer() []byte {
	if n := len(j.spare); n > 0 {
		b := j.spare[n-1]
		j.spare = j.spare[:n-1]
		return b[:format.ChunkHeaderSize]
	}
	b := make([]byte, format.ChunkHeaderSize, max(j.bs, 4096))
	acctBuffers.Alloc(int64(cap(b)))
	return b
}

// recycle keeps up to four written buffers for reuse and drops the rest.
func (j *Journal) recycle(cs []sealedChunk) {
	for _, c := range cs {
		if len(j.spare) < 4 && cap(c.data) <= 2*j.opts.ChunkSize {
			j.spare = append(j.spare, c.data)
		} else {
			acctBuffers.Free(int64(cap(c.data)))
		}
	}
}

// Mark seals the open chunk and returns where the log continues and the
// next sequence number: a checkpoint of the state after every transaction
// below seq lets replay start at pos. The volume calls it under its
// metadata lock when it snapshots, puts both in the superblock (LogHead,
// LogPrev, LogSeq), and calls Release(pos) once that superblock is durable.
func (j *Journal) Mark() (pos Position, seq uint64) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.seal()
	return Position{Block: j.next, Prev: j.prev}, j.nextSeq
}

// Release frees the log before pos (from Mark) for reuse: a durable
// superblock now starts replay there.
func (j *Journal) Release(pos Position) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if pos.Block >= j.blocks {
		return fmt.Errorf("journal: release block %d outside the region of %d: %w", pos.Block, j.blocks, ErrBadArgument)
	}
	d := (pos.Block + j.blocks - j.tail) % j.blocks
	if d > j.used {
		return fmt.Errorf("journal: release block %d: not between tail %d and head %d: %w", pos.Block, j.tail, j.next, ErrBadArgument)
	}
	j.tail = pos.Block
	j.used -= d
	return nil
}

// Usage reports the blocks in use (sealed chunks and the open one) and the
// blocks usable in all. The volume checkpoints early, at half full say.
func (j *Journal) Usage() (used, capacity uint64) {
	j.mu.Lock()
	defer j.mu.Unlock()
	used = j.used
	if j.openTxns > 0 {
		used += j.placeCost(j.chunkBlocks(len(j.open)))
	}
	return used, j.blocks - 1
}

// Durable is the highest sequence number known to be on disk.
func (j *Journal) Durable() uint64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.durable
}

// Last is the sequence number of the last transaction appended (NextSeq-1
// when none): Sync(Last()) commits everything.
func (j *Journal) Last() uint64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.nextSeq - 1
}

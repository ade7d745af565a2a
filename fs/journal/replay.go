package journal

import (
	"errors"
	"fmt"

	"github.com/smallfs/smallfs/fs/device"
	"github.com/smallfs/smallfs/fs/format"
)

// Replay reads the log from opts.Head, expecting sequence opts.NextSeq, and
// calls fn for every transaction in order, each decoded whole before fn
// sees it. It stops at the first chunk that is not the next link of the
// log: bad magic or checksum (torn, or never written), another sequence
// number or chain value (stale, from an earlier lap or an abandoned run).
// It returns where appending continues and the next sequence number.
//
// A chunk whose checksum is right but whose records do not decode is
// corruption, not the end of the log: Replay returns an error wrapping
// format.ErrCorrupt. An error from fn stops replay and is returned as is.
func Replay(dev device.Device, opts Options, fn func(seq uint64, txn []format.Record) error) (head Position, nextSeq uint64, err error) {
	return replay(dev, opts, format.DecodeTxns, fn)
}

// ReplayScan is Replay for mount, where decoding is the cost: the
// transactions are decoded by a format.TxnScanner, so the common records
// reach fn by pointer into reused structures, without an allocation per
// record. fn must not keep txn or its pointers (see format.TxnScanner for
// what it may keep).
func ReplayScan(dev device.Device, opts Options, fn func(seq uint64, txn []format.Record) error) (head Position, nextSeq uint64, err error) {
	var s format.TxnScanner
	return replay(dev, opts, s.Scan, fn)
}

// replay is Replay with the decoder of a chunk's transactions supplied.
func replay(dev device.Device, opts Options, decode func([]byte, uint32, func(int, []format.Record) error) error,
	fn func(seq uint64, txn []format.Record) error) (head Position, nextSeq uint64, err error) {
	if err := opts.fill(); err != nil {
		return Position{}, 0, err
	}
	r := replayer{dev: dev, bs: int(opts.BlockSize), blocks: opts.Region.Len, base: int64(opts.Region.Start) * int64(opts.BlockSize)}
	pos, prev, seq := opts.Head.Block, opts.Head.Prev, opts.NextSeq
	var walked, chunks, txns uint64 // walked bounds replay to one lap
	for {
		h, payload, err := r.read(pos, walked)
		if err != nil {
			return Position{}, 0, err
		}
		if h == nil || h.Seq != seq || h.Prev != prev {
			break
		}
		prev = h.CRC
		if h.Flags&format.ChunkFlagWrap != 0 {
			walked += r.blocks - pos
			pos = 0
			continue
		}
		var fnErr error
		err = decode(payload, h.Txns, func(i int, recs []format.Record) error {
			fnErr = fn(seq+uint64(i), recs)
			return fnErr
		})
		if fnErr != nil {
			return Position{}, 0, fnErr
		}
		if err != nil {
			return Position{}, 0, fmt.Errorf("journal: chunk at log block %d (seq %d) passed its checksum: %w", pos, seq, err)
		}
		k := uint64(format.ChunkSize(len(payload), opts.BlockSize) / r.bs)
		seq += uint64(h.Txns)
		walked += k
		pos = (pos + k) % r.blocks
		chunks++
		txns += uint64(h.Txns)
	}
	opts.Logger.WithField("chunks", chunks).WithField("transactions", txns).WithField("head", pos).
		WithField("next_seq", seq).Info("journal replayed")
	return Position{Block: pos, Prev: prev}, seq, nil
}

type replayer struct {
	dev    device.Device
	bs     int
	blocks uint64
	base   int64
	buf    []byte
}

// read returns the verified chunk at pos, or a nil header where the log
// ends (nothing valid there, or a chunk that would not fit in what is left
// of one lap). Device errors are returned.
func (r *replayer) read(pos, walked uint64) (*format.ChunkHeader, []byte, error) {
	if cap(r.buf) < r.bs {
		r.buf = make([]byte, r.bs, 64<<10)
	}
	b := r.buf[:r.bs]
	if err := r.readAt(b, pos); err != nil {
		return nil, nil, err
	}
	h, err := format.ParseChunkHeader(b)
	if err != nil {
		return nil, nil, nil
	}
	k := uint64(format.ChunkSize(int(h.PayloadLen), uint32(r.bs)) / r.bs)
	if pos+k > r.blocks || walked+k >= r.blocks {
		return nil, nil, nil
	}
	if k > 1 {
		if cap(r.buf) < int(k)*r.bs {
			r.buf = make([]byte, int(k)*r.bs)
			copy(r.buf, b)
		}
		b = r.buf[:int(k)*r.bs]
		if err := r.readAt(b[r.bs:], pos+1); err != nil {
			return nil, nil, err
		}
	}
	h, payload, err := format.CheckChunk(b)
	if err != nil {
		if !errors.Is(err, format.ErrCorrupt) {
			return nil, nil, err
		}
		return nil, nil, nil
	}
	return &h, payload, nil
}

func (r *replayer) readAt(b []byte, block uint64) error {
	if _, err := r.dev.ReadAt(b, r.base+int64(block)*int64(r.bs)); err != nil {
		return fmt.Errorf("journal: read log block %d: %w", block, err)
	}
	return nil
}

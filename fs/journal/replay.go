package journal

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"slices"

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
	apply := func(c heldChunk) error {
		var fnErr error
		err := decode(c.payload, c.txns, func(i int, recs []format.Record) error {
			fnErr = fn(c.seq+uint64(i), recs)
			return fnErr
		})
		if fnErr != nil {
			return fnErr
		}
		if err != nil {
			return fmt.Errorf("journal: chunk at log block %d (seq %d) passed its checksum: %w", c.pos, c.seq, err)
		}
		return nil
	}
	// With DataSums, the chunks of the last commit seen are held until a
	// later commit's chunk shows that commit flushed, or the log ends and
	// their data is checked.
	var held []heldChunk
	pos, prev, seq := opts.Head.Block, opts.Head.Prev, opts.NextSeq
	var walked, chunks, txns uint64 // walked bounds replay to one lap
	var nonce uint32                // of the last chunk accepted
	accepted := false
	for {
		h, payload, err := r.read(pos, walked)
		if err != nil {
			return Position{}, 0, err
		}
		if h == nil || h.Seq != seq || h.Prev != prev {
			break
		}
		nonce, accepted = h.Nonce, true
		c := heldChunk{pos: pos, prev: prev, seq: seq, txns: h.Txns, payload: payload}
		if opts.DataSums && h.Flags&format.ChunkFlagCommit != 0 {
			for _, c := range held {
				if err := apply(c); err != nil {
					return Position{}, 0, err
				}
			}
			held = held[:0]
		}
		prev = h.CRC
		if h.Flags&format.ChunkFlagWrap != 0 {
			if opts.DataSums { // where the log goes on if what follows is dropped
				held = append(held, heldChunk{pos: pos, prev: c.prev, seq: seq})
			}
			walked += r.blocks - pos
			pos = 0
			continue
		}
		if opts.DataSums {
			c.payload = bytes.Clone(payload)
			held = append(held, c)
		} else if err := apply(c); err != nil {
			return Position{}, 0, err
		}
		k := uint64(format.ChunkSize(len(payload), opts.BlockSize) / r.bs)
		seq += uint64(h.Txns)
		walked += k
		pos = (pos + k) % r.blocks
		chunks++
		txns += uint64(h.Txns)
	}
	// The chain ends here: at the end of the log, or at damage before it
	// if the superblock recorded a later transaction as durable, or if a
	// later commit of a journal instance that wrote after this point is on
	// disk past it (only commits flag their first chunk, with DataSums).
	damage, err := r.damage(opts, pos, r.blocks-walked, seq, nonce, accepted)
	if err != nil {
		return Position{}, 0, err
	}
	good := len(held)
	if damage != nil {
		if !opts.Salvage {
			return Position{}, 0, &DamageError{*damage}
		}
		// A later commit flushed after the held chunks did: their data
		// is durable, and may have been reused since, so it is not
		// checked.
		opts.Logger.WithField("damage", damage.String()).Warn("journal: the log is damaged before its end; salvaging: replay keeps the transactions before the damage")
		if opts.OnDamaged != nil {
			opts.OnDamaged(*damage)
		}
	} else if good, err = r.landed(held, opts.Durable); err != nil {
		return Position{}, 0, err
	}
	for _, c := range held[:good] {
		if err := apply(c); err != nil {
			return Position{}, 0, err
		}
	}
	log := opts.Logger.WithField("head", pos)
	if good < len(held) {
		c := held[good]
		log = opts.Logger.WithField("head", c.pos).WithField("dropped_from_seq", c.seq).WithField("dropped", seq-c.seq)
		log.Warn("journal: the last commit's data had not reached the device; its transactions from there on are dropped (that commit never completed)")
		if opts.OnDropped != nil {
			opts.OnDropped(c.seq, seq-c.seq)
		}
		pos, prev, txns = c.pos, c.prev, txns-(seq-c.seq)
		seq = c.seq
	}
	log.WithField("chunks", chunks).WithField("transactions", txns).WithField("next_seq", seq).Info("journal replayed")
	return Position{Block: pos, Prev: prev}, seq, nil
}

// damage tells whether the chain ending at pos, where seq was expected,
// is damage rather than the end of the log, and returns it, or nil for
// the end. Two things prove damage: the superblock recorded seq as
// durable (opts.Durable), or a later commit past pos by a journal
// instance that wrote after seq: the one that wrote the last chunk
// accepted (nonce, if accepted), or one a superblock names
// (opts.Writers).
func (r *replayer) damage(opts Options, pos, n, seq uint64, nonce uint32, accepted bool) (*Damage, error) {
	writers := opts.Writers
	if accepted {
		writers = append(writers[:len(writers):len(writers)], nonce)
	}
	var d *Damage
	var last uint64
	if (opts.DataSums || seq < opts.Durable) && len(writers) > 0 {
		var err error
		if d, last, err = r.laterCommit(pos, n, seq, writers, opts.DataSums); err != nil {
			return nil, err
		}
	}
	if seq < opts.Durable {
		if d == nil {
			d = &Damage{Block: pos, Seq: seq}
		}
		d.Durable = opts.Durable
	}
	if d != nil { // seq and every bound but last are exclusive: above seq
		d.Last = max(last+1, d.ProofSeq, d.Durable, seq+1) - 1
	}
	return d, nil
}

// laterCommit looks at the n blocks from pos on (the rest of the lap)
// for chunks of the journal instances in writers with a sequence above
// seq, the one expected at pos, and returns the highest transaction they
// hold. Commits run one at a time and each ends with a flush, so the
// first chunk of a later commit (flagged, with commits) proves that the chunk for seq at pos had been durable: the
// chain ending at pos is damage, not the end of the log. The chunks of a
// commit that a crash tore are never followed by one, so a damaged last
// commit still looks like the end (as in jbd2). It returns the damage
// that chunk proves, or nil. It reads the whole rest of the region, once per replay of
// a volume that was not closed cleanly.
func (r *replayer) laterCommit(pos, n, seq uint64, writers []uint32, commits bool) (*Damage, uint64, error) {
	bs := uint64(r.bs)
	per := min(max(uint64(1<<20)/bs, 1), n) // blocks read at a time
	win := make([]byte, per*bs)
	var big []byte // a chunk reaching past the window
	var d *Damage
	var last uint64 // highest transaction of the instance's chunks past pos
	for i := uint64(1); i < n; {
		b := (pos + i) % r.blocks
		k := min(per, n-i, r.blocks-b)
		w := win[:k*bs]
		if err := r.readAt(w, b); err != nil {
			return nil, 0, err
		}
		for j := range k {
			h, err := format.ParseChunkHeader(w[j*bs:])
			if err != nil || !slices.Contains(writers, h.Nonce) || h.Seq <= seq {
				continue
			}
			size := uint64(format.ChunkSize(int(h.PayloadLen), uint32(r.bs))) / bs
			if b+j+size > r.blocks {
				continue
			}
			c := w[j*bs:]
			if j+size > k {
				if uint64(len(big)) < size*bs {
					big = make([]byte, size*bs)
				}
				c = big
				if err := r.readAt(c[:size*bs], b+j); err != nil {
					return nil, 0, err
				}
			}
			if _, _, err := format.CheckChunk(c[:size*bs]); err != nil {
				continue
			}
			last = max(last, h.Seq+uint64(h.Txns)-1)
			if commits && h.Flags&format.ChunkFlagCommit != 0 && d == nil {
				d = &Damage{Block: pos, Seq: seq, ProofBlock: b + j, ProofSeq: h.Seq}
			}
		}
		i += k
	}
	return d, last, nil
}

// heldChunk is a chunk read, not yet applied: where it starts, the chain
// value it carries, its first sequence and transactions (none for a wrap
// chunk).
type heldChunk struct {
	pos     uint64
	prev    uint32
	seq     uint64
	txns    uint32
	payload []byte
}

// landed returns how many of the held chunks, in order, have every range
// their DataSumRecs name on the device with its checksum. Chunks below
// durable are known durable and count without a check: a mismatch there
// is damage to data, not a commit that never completed.
func (r *replayer) landed(held []heldChunk, durable uint64) (int, error) {
	for i, c := range held {
		if c.seq < durable {
			continue
		}
		err := format.DecodeTxns(c.payload, c.txns, func(_ int, recs []format.Record) error {
			for _, rec := range recs {
				var match bool
				var err error
				switch rec := rec.(type) {
				case format.DataSumRec:
					match, err = r.sumsMatch(rec)
				case format.BlockSumsRec:
					match, err = r.blockSumsMatch(rec)
				default:
					continue
				}
				if err != nil || !match {
					return cmp.Or(err, errDataMissing)
				}
			}
			return nil
		})
		switch {
		case errors.Is(err, errDataMissing):
			return i, nil
		case err != nil:
			return 0, fmt.Errorf("journal: chunk at log block %d (seq %d): %w", c.pos, c.seq, err)
		}
	}
	return len(held), nil
}

// errDataMissing stops the check of a chunk at its first data sum that
// does not match.
var errDataMissing = errors.New("data missing")

// sumsMatch reads the ranges of ds and compares their checksums.
func (r *replayer) sumsMatch(ds format.DataSumRec) (bool, error) {
	const piece = 1 << 20
	if cap(r.data) < piece {
		r.data = make([]byte, piece)
	}
	bs := uint64(r.bs)
	for _, x := range ds.Ranges {
		if x.Len > uint64(r.dev.Size())/bs || x.Block > uint64(r.dev.Size())/bs-x.Len {
			return false, fmt.Errorf("data checksum of inode %d names blocks %d+%d beyond the device: %w", ds.Ino, x.Block, x.Len, format.ErrCorrupt)
		}
		var crc uint32
		for off, end := x.Block*bs, (x.Block+x.Len)*bs; off < end; {
			b := r.data[:min(piece, end-off)]
			if _, err := r.dev.ReadAt(b, int64(off)); err != nil {
				return false, fmt.Errorf("journal: read data at block %d: %w", off/bs, err)
			}
			crc = format.UpdateChecksum(crc, b)
			off += uint64(len(b))
		}
		if crc != x.CRC {
			return false, nil
		}
	}
	return true, nil
}

// blockSumsMatch reads the blocks of bs and compares each one's checksum.
func (r *replayer) blockSumsMatch(bs format.BlockSumsRec) (bool, error) {
	const piece = 1 << 20
	if cap(r.data) < piece {
		r.data = make([]byte, piece)
	}
	size := uint64(r.bs)
	n := uint64(len(bs.Sums))
	if blocks := uint64(r.dev.Size()) / size; n > blocks || bs.Block > blocks-n {
		return false, fmt.Errorf("checksums name blocks %d+%d beyond the device: %w", bs.Block, n, format.ErrCorrupt)
	}
	per := uint64(piece) / size
	for i := uint64(0); i < n; i += per {
		k := min(per, n-i)
		b := r.data[:k*size]
		if _, err := r.dev.ReadAt(b, int64((bs.Block+i)*size)); err != nil {
			return false, fmt.Errorf("journal: read data at block %d: %w", bs.Block+i, err)
		}
		for j := range k {
			if format.Checksum(b[j*size:(j+1)*size]) != bs.Sums[i+j] {
				return false, nil
			}
		}
	}
	return true, nil
}

type replayer struct {
	dev    device.Device
	bs     int
	blocks uint64
	base   int64
	buf    []byte
	data   []byte // for checking data sums
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

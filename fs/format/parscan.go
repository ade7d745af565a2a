package format

import (
	"runtime"
	"sync"
)

// ScanCheckpoint decodes on several goroutines: the payload is cut into
// chunks of whole records as it is read (a walk of the record frames,
// which costs a few nanoseconds a record), workers decode the chunks,
// and the caller's goroutine hands their records to fn in payload order
// while the next chunks are decoded. So fn runs on one goroutine, in
// order, exactly as with one decoder; only the decoding is shared.

// scanChunkBytes is the payload a chunk holds, about 10^4 records: large
// enough that handing it over costs nothing next to decoding it, small
// enough that the workers start at once.
const scanChunkBytes = 256 << 10

// scanWorkers is how many goroutines decode: one per CPU Go runs on, at
// most 4 (the caller, applying records, is the bound beyond that).
func scanWorkers() int { return min(runtime.GOMAXPROCS(0), 4) }

// scanChunk is a run of whole records and, once a worker has decoded
// it, the records.
type scanChunk struct {
	buf  []byte   // the records' bytes
	recs []Record // decoded, in order, pointing into the slices below
	err  error    // what ends the stream after recs
	done chan struct{}

	inodes  []InodeRec
	dirents []DirentRec
	extents []ExtentsRec
	sums    []BlockSumsRec
}

// parStream is recordStream for ScanCheckpoint: the checksum, the count
// and the record frames on the caller's goroutine, the decoding on
// workers.
type parStream struct {
	fn      func(Record) error
	crc     uint32
	records uint64
	cur     *scanChunk // filling
	walked  int        // bytes of cur.buf that are whole records
	queue   []*scanChunk
	work    chan *scanChunk
	free    chan *scanChunk
	wg      sync.WaitGroup
	failed  error // the first error in payload order, once reached
	started bool
}

func newParStream(fn func(Record) error) *parStream {
	n := scanWorkers()
	s := &parStream{fn: fn, work: make(chan *scanChunk, 2*n), free: make(chan *scanChunk, 4*n+2)}
	return s
}

// start starts the workers at the first chunk: a checkpoint of one
// chunk is decoded by the caller.
func (s *parStream) start() {
	s.started = true
	for range scanWorkers() {
		s.wg.Go(func() {
			var names arena
			for c := range s.work {
				c.decode(&names)
				close(c.done)
			}
		})
	}
}

// carried is the bytes of an incomplete record at the end of what was
// fed.
func (s *parStream) carried() int {
	if s.cur == nil {
		return 0
	}
	return len(s.cur.buf) - s.walked
}

func (s *parStream) chunk() *scanChunk {
	select {
	case c := <-s.free:
		c.buf, c.recs, c.err = c.buf[:0], c.recs[:0], nil
		c.inodes, c.dirents, c.extents, c.sums = c.inodes[:0], c.dirents[:0], c.extents[:0], c.sums[:0]
		return c
	default:
		return &scanChunk{buf: make([]byte, 0, scanChunkBytes+readChunkSize)}
	}
}

// feed takes the next piece of payload. Errors are those of records
// before the piece's end, in order: a chunk's decoding error or fn's.
func (s *parStream) feed(p []byte) error {
	if s.failed != nil {
		return s.failed
	}
	s.crc = UpdateChecksum(s.crc, p)
	for len(p) > 0 {
		if s.cur == nil {
			s.cur, s.walked = s.chunk(), 0
		}
		c := s.cur
		take := min(len(p), max(scanChunkBytes-len(c.buf), 0))
		if take == 0 {
			take = len(p) // a record larger than a chunk: keep growing
		}
		c.buf = append(c.buf, p[:take]...)
		p = p[take:]
		for s.walked < len(c.buf) {
			size, complete, err := recordSize(c.buf[s.walked:])
			if err != nil {
				// The frame is damage: decode what is before it, then
				// end there.
				c.buf = c.buf[:s.walked]
				c.err = err
				s.dispatch()
				return s.drain()
			}
			if !complete || s.walked+size > len(c.buf) {
				break
			}
			s.walked += size
			s.records++
		}
		if len(c.buf) >= scanChunkBytes && s.walked > 0 {
			s.cut()
		}
		if err := s.consumeReady(); err != nil {
			return err
		}
	}
	return nil
}

// cut dispatches the whole records of cur and starts the next chunk with
// the incomplete one after them.
func (s *parStream) cut() {
	c := s.cur
	rest := c.buf[s.walked:]
	next := s.chunk()
	next.buf = append(next.buf, rest...)
	c.buf = c.buf[:s.walked]
	s.dispatch()
	s.cur, s.walked = next, 0
}

// dispatch queues cur for decoding and for fn, in order.
func (s *parStream) dispatch() {
	c := s.cur
	s.cur = nil
	c.done = make(chan struct{})
	if !s.started {
		s.start()
	}
	s.queue = append(s.queue, c)
	s.work <- c
}

// consumeReady hands fn the decoded chunks at the head of the queue
// while the queue is full, so at most a few chunks are in flight.
func (s *parStream) consumeReady() error {
	for len(s.queue) >= cap(s.work) {
		if err := s.consume(); err != nil {
			return err
		}
	}
	return nil
}

// consume waits for the oldest chunk and hands fn its records.
func (s *parStream) consume() error {
	c := s.queue[0]
	s.queue = s.queue[1:]
	<-c.done
	for _, r := range c.recs {
		if s.fn == nil {
			continue
		}
		if err := s.fn(r); err != nil {
			s.failed = err
			return err
		}
	}
	if c.err != nil {
		s.failed = c.err
		return c.err
	}
	select {
	case s.free <- c:
	default:
	}
	return nil
}

// drain hands fn every chunk dispatched so far (the payload's whole
// records, up to an error) and stops the workers. It returns the first
// error in payload order.
func (s *parStream) drain() error {
	for len(s.queue) > 0 && s.failed == nil {
		_ = s.consume()
	}
	s.stop()
	return s.failed
}

// finish dispatches the whole records left and drains; bytes of an
// incomplete record stay (carried).
func (s *parStream) finish() error {
	if s.failed == nil && s.cur != nil && s.walked > 0 {
		s.cut()
	}
	return s.drain()
}

// stop ends the workers once the queue is empty or abandoned.
func (s *parStream) stop() {
	if s.work != nil {
		close(s.work)
		s.wg.Wait()
		s.work = nil
	}
}

// decode decodes the chunk's records, as scanner.decode does, into the
// chunk's own structures, interning names in names.
func (c *scanChunk) decode(names *arena) {
	b := c.buf
	for len(b) > 0 {
		size, _, _ := recordSize(b) // walked already: whole and framed
		r, err := c.decodeOne(b[:size], names)
		if err != nil {
			c.err = err
			return
		}
		c.recs = append(c.recs, r)
		b = b[size:]
	}
}

func (c *scanChunk) decodeOne(b []byte, names *arena) (Record, error) {
	typ, d, _, err := frame(b)
	if err != nil {
		return nil, err
	}
	switch typ {
	case RecInode:
		r := grow(&c.inodes)
		decodeInode(&d, r)
		return r, d.finish(typ, func() string { return checkIno(r.Ino) })
	case RecDirent:
		r := grow(&c.dirents)
		r.Parent, r.Ino, r.Cookie = d.uvarint("parent"), d.uvarint("ino"), d.uvarint("cookie")
		r.Name = names.str(d.span("name", MaxNameLen))
		return r, d.finish(typ, r.check)
	case RecExtents:
		r := grow(&c.extents)
		r.Ino, r.Extents = d.uvarint("ino"), decodeExtents(&d)
		return r, d.finish(typ, r.check)
	case RecBlockSums:
		// Reslice rather than grow: the slot keeps the sums' memory of an
		// earlier use of the chunk.
		if len(c.sums) < cap(c.sums) {
			c.sums = c.sums[:len(c.sums)+1]
		} else {
			c.sums = append(c.sums, BlockSumsRec{})
		}
		r := &c.sums[len(c.sums)-1]
		decodeBlockSums(&d, r, r.Sums)
		return r, d.finish(typ, r.check)
	}
	r, _, err := DecodeRecord(b)
	return r, err
}

package journal

import (
	"fmt"

	"github.com/smallfs/smallfs/fs/device"
)

// Sync makes every transaction up to seq durable. Concurrent callers share
// the work: one leader at a time seals the open chunk and commits all
// sealed chunks with dev.Flush (so data the volume wrote before appending
// is durable before the records that point at it), one write per chunk,
// and dev.Flush again; callers whose sequence that covered return without
// I/O, the others wait for the next leader. Append never waits for I/O.
func (j *Journal) Sync(seq uint64) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if seq >= j.nextSeq {
		return fmt.Errorf("journal: sync of sequence %d, last appended %d: %w", seq, j.nextSeq-1, ErrBadArgument)
	}
	if j.durable < seq {
		ctrWaited.Inc()
	}
	for j.durable < seq {
		if j.err != nil {
			return j.err
		}
		if j.syncing {
			j.waiting++
			j.cond.Wait()
			j.waiting--
			continue
		}
		if err := j.commit(); err != nil {
			return err
		}
	}
	return nil
}

// commit runs one group commit as leader. Called and returns with mu held;
// releases it around the I/O.
func (j *Journal) commit() error {
	j.syncing = true
	j.seal()
	batch := j.sealed
	j.sealed = nil
	j.mu.Unlock()
	err := j.write(batch)
	j.mu.Lock()
	if err != nil {
		j.err = fmt.Errorf("journal: %w: %w", ErrFailed, err)
		j.opts.Logger.WithError(err).Error("journal commit failed; the log needs replay")
		j.recycle(batch) // written or not, never again
	} else if n := len(batch); n > 0 {
		j.durable = batch[n-1].lastSeq
		j.recycle(batch)
		j.cond.Broadcast() // covered waiters need not wait for OnDurable
		if fn := j.opts.OnDurable; fn != nil {
			d := j.durable
			j.mu.Unlock()
			fn(d)
			j.mu.Lock()
		}
	}
	j.syncing = false
	j.cond.Broadcast()
	return j.err
}

// write commits a batch: barrier, chunks, barrier. The first barrier
// makes the data the batch's records point at durable before the records;
// on a device that tracks its writes (device.Tracked) it is skipped when
// nothing was written since the last flush began, as after metadata-only
// changes, and with Options.DataSums it is never issued: replay checks
// the last commit's data instead.
func (j *Journal) write(batch []sealedChunk) error {
	ctrCommits.Inc()
	if u, ok := j.dev.(unflushed); j.opts.DataSums || ok && !u.Unflushed() {
		ctrBarriersSkipped.Inc()
	} else if err := j.flush(); err != nil {
		return err
	}
	base := int64(j.opts.Region.Start) * int64(j.bs)
	z, zeroAhead := j.dev.(device.ZeroAheader)
	for _, c := range batch {
		off := base + int64(c.block)*int64(j.bs)
		if zeroAhead { // the flush below must not convert host blocks
			if err := z.ZeroAhead(off, int64(len(c.data))); err != nil {
				return fmt.Errorf("zero ahead of log block %d: %w", c.block, err)
			}
		}
		if _, err := j.dev.WriteAt(c.data, off); err != nil {
			return fmt.Errorf("write chunk at log block %d: %w", c.block, err)
		}
		ctrChunks.Inc()
		ctrBytes.Add(int64(len(c.data)))
	}
	return j.flush()
}

// unflushed is implemented by devices that know whether a write has
// completed since their last flush began (device.Tracked).
type unflushed interface{ Unflushed() bool }

func (j *Journal) flush() error {
	ctrFlushes.Inc()
	if err := j.dev.Flush(); err != nil {
		return fmt.Errorf("flush: %w", err)
	}
	return nil
}

// Fail makes every later Append and Sync fail with ErrFailed wrapping
// cause, as a device error in a commit does, and writes nothing more: the
// volume calls it when the device failed one of its other metadata
// writes (a checkpoint, a superblock), so the log stops where the disk
// last answered. A commit already writing finishes; a journal failed
// already keeps its first cause.
func (j *Journal) Fail(cause error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.err == nil {
		j.err = fmt.Errorf("journal: %w: %w", ErrFailed, cause)
		j.cond.Broadcast()
	}
}

// Close commits everything appended and closes the journal; later calls
// return ErrClosed. It does not close the device.
func (j *Journal) Close() error {
	err := j.Sync(j.Last())
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.open == nil {
		return ErrClosed
	}
	if j.err == nil {
		j.err = ErrClosed
	}
	for _, b := range j.spare {
		acctBuffers.Free(int64(cap(b)))
	}
	j.spare = nil
	for _, c := range j.sealed { // left by a failed journal
		acctBuffers.Free(int64(cap(c.data)))
	}
	j.sealed = nil
	acctBuffers.Free(int64(cap(j.open)))
	j.open = nil
	return err
}

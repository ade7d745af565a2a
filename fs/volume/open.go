package volume

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/smallfs/smallfs/alloc"
	"github.com/smallfs/smallfs/fs/device"
	"github.com/smallfs/smallfs/fs/format"
	"github.com/smallfs/smallfs/fs/journal"
)

// Open mounts the smallfs on dev: it reads the newest valid superblock,
// loads its checkpoint, replays the log after it unless the volume was
// closed cleanly, frees inodes left without links by a crash, rebuilds free
// space from every extent referenced, and starts the periodic commit. It
// refuses a device of a newer format version, with two bad superblocks, or
// whose metadata does not load (records that do not apply) or loads but
// fails its checks (metaCheck: ErrInconsistent, unless
// Options.OpenDamaged), naming what is wrong and writing nothing. A
// damaged newest checkpoint is worked around when the older one and the
// log lose nothing (openOlder, Recovery.Damaged). dev stays the caller's:
// Close does not close it.
func Open(dev device.Device, opts Options) (*Volume, error) {
	sb, older, err := format.ReadSuperblocks(dev)
	switch {
	case errors.Is(err, format.ErrNotSmallfs):
		return nil, fmt.Errorf("open: %w (%w)", ErrInvalid, err)
	case errors.Is(err, format.ErrNewerVersion), errors.Is(err, format.ErrUnknownFeature):
		return nil, fmt.Errorf("open: %w (%w)", ErrNotSupported, err)
	case err != nil:
		return nil, fmt.Errorf("open: %w (%w)", ErrCorrupt, err)
	}
	opts, err = opts.withDefaults(int(sb.BlockSize))
	if err != nil {
		return nil, fmt.Errorf("open: %w", err)
	}
	start := time.Now()
	v := newVolume(dev, opts, sb)
	alone := older == nil
	head, nextSeq, err := v.load(sb, alone)
	var damage *checkpointDamage
	if errors.As(err, &damage) {
		if older != nil && older.Checkpoint != 0 && older.Checkpoint != sb.Checkpoint {
			v, head, nextSeq, err = openOlder(dev, opts, sb, older, damage)
		} else {
			why := "the other superblock does not read"
			if older != nil {
				why = "both superblocks name it"
			}
			err = &marked{fmt.Errorf("%w; no older checkpoint to fall back to (%s)", damage, why), ErrNoCheckpoint}
		}
	}
	if err != nil && damage != nil && opts.OpenDamaged && !errors.Is(damage.err, format.ErrCorrupt) {
		// No checkpoint stands in, but the newest one's bytes are sound:
		// for a look or a repair, load it without the records that do
		// not apply.
		if lv, lhead, lnext, lerr := openLenient(dev, opts, sb, alone); lerr == nil {
			v, head, nextSeq, err = lv, lhead, lnext, nil
		}
	}
	if err != nil {
		return nil, fmt.Errorf("open: %w", err)
	}
	// loaded is the superblock whose checkpoint and log position v holds.
	loaded := sb
	if v.recovery.Damaged != nil {
		loaded = older
	}
	damaged, err := v.checkLoaded()
	if err != nil {
		return nil, fmt.Errorf("open: %w", err)
	}
	v.space.setCheckpoint(blocksIn(v.refs[loaded.Slot].extents))
	v.j, err = journal.Open(v.dev, journal.Options{
		Region: sb.Log, BlockSize: sb.BlockSize, Head: head, NextSeq: nextSeq, Tail: loaded.LogHead,
		DataSums: v.dataSums, OnDurable: v.onDurable(nextSeq - 1), Logger: opts.Logger, Accounting: opts.Accounting,
	})
	if errors.Is(err, journal.ErrBadArgument) { // the log position the superblock names is impossible
		err = fmt.Errorf("superblock: %w (%w)", ErrCorrupt, err)
	}
	if err != nil {
		return nil, fmt.Errorf("open: %w", err)
	}
	// Mark the volume in use before anything is appended: a crash from here
	// on must replay. Both slots then name the loaded checkpoint. Replay
	// still starts where it started now: what it replayed is in no
	// checkpoint yet, only in the log, which the next checkpoint releases.
	// It also records what replay now knows: every transaction before
	// nextSeq is durable, and this journal instance writes from there on
	// (format.Superblock.LogDurable), so damage there is never taken for
	// the end of the log.
	//
	// It goes into both slots, one after the other: either may be lost
	// later, and the other slot otherwise still names no writer or an
	// earlier mount's (mkfs's, a clean close's), past whose log position
	// this instance's commits are not told from stale chunks: a damaged
	// first chunk would pass for the end of the log. The first write
	// already made both slots name the loaded checkpoint, so the second
	// drops nothing.
	v.sb.Flags &^= format.FlagClean
	v.sb.LogDurable, v.sb.LogWriter = nextSeq, v.j.Nonce()
	for range 2 {
		if err := v.writeSuperblock(&v.sb); err != nil {
			v.j.Close()
			return nil, fmt.Errorf("open: %w", err)
		}
	}
	if err := v.freeOrphans(damaged); err != nil {
		v.j.Close()
		return nil, fmt.Errorf("open: %w", err)
	}
	if damaged != nil {
		v.openDamaged(damaged.findings)
	}
	v.startCommitter()
	v.startFlusher()
	opts.Logger.WithField("inodes", v.inodes.used).WithField("clean", sb.Clean()).
		WithField("took", time.Since(start)).Info("volume open")
	return v, nil
}

// newVolume is the volume of superblock sb before anything is loaded.
func newVolume(dev device.Device, opts Options, sb *format.Superblock) *Volume {
	// Tracked: a commit with no data written since the last flush skips
	// its data barrier (journal.write); every write goes through v.dev.
	v := &Volume{opts: opts, dev: device.Track(dev), blockSize: int(sb.BlockSize), now: clock, nextGen: 1, sb: *sb,
		dataSums: sb.Features&format.FeatureDataSums != 0}
	v.acct = newAcct(opts.Accounting)
	v.ra = newReadahead(dev, opts.Readahead)
	if sb.Features&format.FeatureBlockSums != 0 {
		v.sums = newBlockSums(sb.Blocks, v.acct.blockSums)
	}
	v.inodes.acct = v.acct.chunks
	v.inodes.limit = min(sb.Blocks*uint64(sb.BlockSize)/bytesPerInode, maxInodes)
	v.dataStart = sb.Log.End()
	v.txnRoom = txnRoom(sb.Log.Len, sb.BlockSize)
	v.fixed = []alloc.Extent{{Off: 0, Len: v.dataStart}}
	return v
}

// checkpointDamage is a checkpoint that does not load: bytes that fail
// their checks, or records that do not make a filesystem.
type checkpointDamage struct {
	sb  *format.Superblock // the superblock naming it
	err error
}

func (d *checkpointDamage) Error() string {
	return fmt.Sprintf("checkpoint at block %d (superblock %c): %v", d.sb.Checkpoint, 'A'+d.sb.Slot, d.err)
}

func (d *checkpointDamage) Unwrap() []error { return []error{ErrCorrupt, d.err} }

// ErrNoCheckpoint is wrapped, with ErrCorrupt, by Open's error when no
// checkpoint loads: the newest is damaged and so is the older one the
// other superblock names, or there is none. The log holds only changes
// to a checkpoint, so nothing is left to rebuild the metadata from, and
// fsck cannot repair it.
var ErrNoCheckpoint = errors.New("no checkpoint left to load the metadata from")

// ErrCheckpointLoss is wrapped, with ErrCorrupt, by Open's error when the
// newest checkpoint is damaged and the log after the older one ends
// before the damaged one's position: standing in, they would lose the
// committed transactions the error names. Options.Salvage accepts that
// loss (CheckpointDamage.Lost).
var ErrCheckpointLoss = errors.New("the older checkpoint and the log after it would lose committed transactions")

// marked is err that also is (errors.Is) a sentinel, without its text.
type marked struct {
	err      error
	sentinel error
}

func (m *marked) Error() string   { return m.err.Error() }
func (m *marked) Unwrap() []error { return []error{m.err, m.sentinel} }

// openOlder loads the checkpoint older names when the newest one, which
// sb names, is damaged. The older checkpoint stays allocated while a slot
// names it (ckptExtents), and the log from its position on is one chain
// through the newest checkpoint's position (the journal continues across
// checkpoints), so replaying it from there rebuilds what the damaged
// checkpoint held and everything after it, unless the journal has reused
// that log since (a lap past it) or the damaged checkpoint covered
// transactions that never reached the log (it is written before they
// are). So the result is kept only if replay passes the damaged
// checkpoint's own log position: then nothing committed is lost.
// Otherwise Open refuses, naming both checkpoints and the transactions
// lost, and changes nothing; with Options.Salvage it keeps the older
// checkpoint and what the log replays, and Recovery.Damaged names the
// loss. A damaged older checkpoint too is ErrNoCheckpoint.
//
// The volume then writes its superblocks over the damaged slot: both name
// the older checkpoint, and the damaged one's blocks, which nothing marks
// used, are free.
func openOlder(dev device.Device, opts Options, sb, older *format.Superblock, damage *checkpointDamage) (*Volume, journal.Position, uint64, error) {
	fail := func(format string, args ...any) (*Volume, journal.Position, uint64, error) {
		return nil, journal.Position{}, 0, fmt.Errorf("%w; the older checkpoint at block %d (superblock %c) "+format,
			append([]any{damage, older.Checkpoint, 'A' + older.Slot}, args...)...)
	}
	v := newVolume(dev, opts, older)
	if err := v.loadFrom(older); err != nil {
		var od *checkpointDamage
		if errors.As(err, &od) {
			return nil, journal.Position{}, 0, &marked{fmt.Errorf("both checkpoints are damaged: the newest %w; the older %w; no checkpoint is left to load the metadata from", damage, od), ErrNoCheckpoint}
		}
		return fail("does not load either: %w", err)
	}
	// The damaged checkpoint's superblock is intact: what it knows of the
	// log holds for this replay too.
	head, next, err := v.replay(older, append(logWriters(older), logWriters(sb)...))
	if err != nil {
		return fail("cannot stand in: %w", err)
	}
	d := &CheckpointDamage{Block: sb.Checkpoint, Slot: sb.Slot, Reason: damage.err.Error(), Loaded: older.Checkpoint, LoadedSlot: older.Slot}
	if next < max(sb.LogSeq, sb.LogDurable) {
		d.Lost, d.LostFirst, d.LostLast = true, next, v.lastLogged(sb)
		if !opts.Salvage {
			beyond := ""
			if d.LostLast >= sb.LogSeq {
				beyond = fmt.Sprintf(" and the log after it up to %d", d.LostLast)
			}
			_, _, _, err := fail("and the log after it end before transaction %d, but the damaged one covers up to %d%s: "+
				"committed transactions %d-%d would be lost, so the volume is not opened",
				next, sb.LogSeq-1, beyond, d.LostFirst, d.LostLast)
			return nil, journal.Position{}, 0, &marked{err, ErrCheckpointLoss}
		}
	}
	v.recovery.Damaged = d
	// The next superblock goes over the damaged slot: the older one stays
	// as it is until then.
	v.sb.Generation = sb.Generation + 1
	log := opts.Logger.WithField("damaged", sb.Checkpoint).WithField("loaded", older.Checkpoint).WithError(damage.err)
	if d.Lost {
		log.WithField("lost_first", d.LostFirst).WithField("lost_last", d.LostLast).
			Warn("the newest checkpoint is damaged and the log after the older one ends before it: salvaged, keeping the older checkpoint and what the log replays; " +
				"the committed transactions from lost_first to lost_last are lost")
	} else {
		log.Warn("the newest checkpoint is damaged: loaded the older one and replayed the log from its position; nothing is lost. " +
			"The next checkpoint replaces it (smallfs fsck --repair writes one at once)")
	}
	return v, head, next, nil
}

// openLenient loads the checkpoint sb names leaving out each record that
// does not apply (a directory entry in a file, data of a missing inode, a
// name listed twice, ...), noting it in v.dropped, and replays the log
// after it. It is the last resort of Options.OpenDamaged, when no
// checkpoint loads as it is: what it leaves out is reported as a problem,
// the volume opens damaged, and Repair's fresh checkpoint leaves it out
// for good.
func openLenient(dev device.Device, opts Options, sb *format.Superblock, alone bool) (*Volume, journal.Position, uint64, error) {
	v := newVolume(dev, opts, sb)
	v.lenient = true
	head, next, err := v.load(sb, alone)
	v.lenient = false
	if err != nil {
		return nil, journal.Position{}, 0, err
	}
	opts.Logger.WithField("left_out", len(v.dropped)).
		Warn("no checkpoint loads as it is: loaded the newest without the records that do not apply")
	return v, head, next, nil
}

// applyOrDrop is apply for a lenient load (openLenient): a record that
// does not apply is noted and left out.
func (v *Volume) applyOrDrop(r format.Record) error {
	err := v.apply(r)
	if err == nil || !errors.Is(err, ErrCorrupt) {
		return err
	}
	ino, dir := touches(r)
	v.dropped = append(v.dropped, finding{
		Problem: Problem{Ino: cmp.Or(ino, dir), What: "checkpoint record not loaded: " + strings.TrimSuffix(err.Error(), ": "+ErrCorrupt.Error())},
		kind:    findRecord,
	})
	return nil
}

// lastLogged is the last transaction known committed when the checkpoint
// sb names does not load: the last one it covers, or the last one the
// log after its position holds, which is read through without applying
// anything (a salvaging read: damage there ends it, as far as the log
// shows). A device error there leaves what the checkpoint covers.
func (v *Volume) lastLogged(sb *format.Superblock) uint64 {
	last := max(sb.LogSeq, sb.LogDurable) - 1
	if sb.Clean() { // closed: nothing was logged after it
		return last
	}
	_, _, _ = journal.ReplayScan(v.dev, journal.Options{
		Region: sb.Log, BlockSize: sb.BlockSize, Head: journal.Position{Block: sb.LogHead, Prev: sb.LogPrev},
		NextSeq: sb.LogSeq, DataSums: v.dataSums, Salvage: true, Durable: sb.LogDurable, Writers: logWriters(sb),
		OnDamaged: func(d journal.Damage) { last = max(last, d.Last) },
	}, func(seq uint64, _ []format.Record) error {
		last = max(last, seq)
		return nil
	})
	return last
}

// maxExtentBytes is the most an extent takes in an ExtentsRec: three
// varints; maxSumBytes the most a range takes in a DataSumRec: two
// varints and a checksum.
const (
	maxExtentBytes = 30
	maxSumBytes    = 24
)

// onDurable returns what the journal calls after each commit: it makes
// the blocks freed by durable transactions allocatable. With data sums a
// commit's frees wait for the next commit as well: replay checks the last
// commit's data, so a block it wrote must not be rewritten (freed later in
// the same commit, then reused) while that commit may still be the last
// one in the log. A checkpoint releases everything it covers at once.
func (v *Volume) onDurable(durable uint64) func(uint64) {
	if !v.dataSums {
		return v.space.durable
	}
	prev := durable // the commit before the one that just ended
	return func(seq uint64) {
		v.space.durable(prev)
		prev = seq
		v.unsynced.Store(0) // roughly: write-backs appended since the seal count again
	}
}

// txnRoom is the bytes of an extent map a log of logBlocks blocks surely
// takes in one transaction: the journal allows half the log less a block,
// less 1 KiB for the chunk header and the transaction's other records (an
// inode, an emptied inline record).
func txnRoom(logBlocks uint64, blockSize uint32) int {
	room := (max(logBlocks/2, 2) - 1) * uint64(blockSize)
	return int(max(room, 1024) - 1024)
}

// load rebuilds the metadata from the checkpoint and, after a crash, the
// log; it returns where the log continues. A checkpoint that does not load
// is a *checkpointDamage.
//
// A clean superblock skips the replay only when it is one of two: alone
// (the other slot does not decode) it may be the clean close before the
// slot a later mount wrote first, which is lost, and that mount's commits
// continue the log from this one's position. Replay then finds them, or
// ends at once where nothing was logged after the close (a chunk there
// with the right sequence and chain was written after it).
func (v *Volume) load(sb *format.Superblock, alone bool) (journal.Position, uint64, error) {
	if err := v.loadFrom(sb); err != nil {
		return journal.Position{}, 0, err
	}
	v.recovery.Clean = sb.Clean()
	if sb.Clean() && !alone {
		return journal.Position{Block: sb.LogHead, Prev: sb.LogPrev}, sb.LogSeq, nil
	}
	head, next, err := v.replay(sb, logWriters(sb))
	if err == nil && next > sb.LogSeq {
		v.recovery.Clean = false
	}
	return head, next, err
}

// loadFrom loads the checkpoint sb names and notes its blocks as the
// slot's. Damage (anything but a device error or a newer format) is a
// *checkpointDamage.
func (v *Volume) loadFrom(sb *format.Superblock) error {
	info, err := v.loadCheckpoint(sb)
	if root := v.inodes.get(RootIno); err == nil && (root == nil || !root.isDir()) {
		err = fmt.Errorf("checkpoint has no root directory: %w", ErrCorrupt)
	}
	if err != nil {
		if errors.Is(err, format.ErrCorrupt) || errors.Is(err, ErrCorrupt) {
			return &checkpointDamage{sb: sb, err: err}
		}
		return fmt.Errorf("checkpoint at block %d: %w (%w)", sb.Checkpoint, ErrCorrupt, err)
	}
	// Generations issued and freed before the checkpoint are below its
	// NextGen; those after it are in the log replayed below.
	v.nextGen = max(v.nextGen, info.NextGen)
	ck := ckptRef{block: info.Block}
	for _, r := range info.Extents {
		ck.extents = append(ck.extents, alloc.Extent{Off: r.Start, Len: r.Len})
	}
	v.refs[sb.Slot] = ck
	return nil
}

// replay applies the log from sb's position and returns where it ends.
// writers are the journal instances superblocks name as writing after
// that position.
func (v *Volume) replay(sb *format.Superblock, writers []uint32) (journal.Position, uint64, error) {
	pr := v.progress(PhaseReplay, 0)
	defer pr.end()
	head, next, err := journal.ReplayScan(v.dev, journal.Options{
		Region: sb.Log, BlockSize: sb.BlockSize, Head: journal.Position{Block: sb.LogHead, Prev: sb.LogPrev},
		NextSeq: sb.LogSeq, DataSums: v.dataSums, Salvage: v.opts.Salvage,
		Durable: sb.LogDurable, Writers: writers,
		OnDropped: func(_, n uint64) { v.recovery.Dropped = n },
		OnDamaged: func(d journal.Damage) {
			v.recovery.LogDamage = &LogDamage{Block: d.Block, First: d.Seq, Last: d.Last, ProofBlock: d.ProofBlock, ProofSeq: d.ProofSeq}
		},
	}, func(seq uint64, txn []format.Record) error {
		pr.step()
		for _, r := range txn {
			if err := v.apply(r); err != nil {
				return fmt.Errorf("log transaction %d: %w", seq, err)
			}
		}
		return nil
	})
	if err != nil {
		if !errors.Is(err, ErrCorrupt) {
			err = fmt.Errorf("%w (%w)", ErrCorrupt, err)
		}
		return journal.Position{}, 0, fmt.Errorf("replay: %w", err)
	}
	v.recovery.Transactions = next - sb.LogSeq
	if d := v.recovery.LogDamage; d != nil {
		v.opts.Logger.WithField("damage", d.String()).Warn("the metadata log is damaged before its end; salvaged: the committed transactions after the damage are lost")
	}
	v.opts.Logger.WithField("transactions", next-sb.LogSeq).WithField("dropped", v.recovery.Dropped).Info("log replayed")
	return head, next, nil
}

// logWriters is the journal instance sb names as appending after its
// log position, if it names one.
func logWriters(sb *format.Superblock) []uint32 {
	if sb.LogWriter == 0 {
		return nil
	}
	return []uint32{sb.LogWriter}
}

// loadCheckpoint applies the checkpoint sb names. Its directories' entries
// come in cookie order, each once: they are appended without lookups and
// indexed at the end, one map of the right size per directory.
func (v *Volume) loadCheckpoint(sb *format.Superblock) (format.CheckpointInfo, error) {
	var dirs []loadedDir
	v.loading = &dirs
	defer func() { v.loading = nil }()
	apply := v.apply
	if v.lenient {
		apply = v.applyOrDrop
	}
	if v.opts.Progress != nil {
		pr := v.progress(PhaseCheckpoint, v.checkpointRecords(sb))
		defer pr.end()
		each := apply
		apply = func(r format.Record) error { pr.step(); return each(r) }
	}
	info, err := format.ScanCheckpoint(v.dev, sb.CheckpointLoc(), apply)
	if err != nil {
		return info, err
	}
	for _, d := range dirs {
		err := v.indexLoaded(d.d, d.ino)
		if err != nil && v.lenient {
			for _, name := range d.d.dropDuplicates() {
				v.acct.dirents.Free(direntBytes + int64(len(name)))
				v.dropped = append(v.dropped, finding{
					Problem: Problem{Ino: Ino(d.ino), What: fmt.Sprintf("checkpoint entry %q listed twice: the second not loaded", name)},
					kind:    findRecord,
				})
			}
			err = v.indexLoaded(d.d, d.ino)
		}
		if err != nil {
			return info, err
		}
	}
	return info, nil
}

// checkLoaded checks what Open loaded (metaCheck) and builds the
// allocator from every block in use: the superblocks and log, the
// checkpoints the superblocks name, and the files' extents. The
// allocator's build sorts them and finds blocks claimed twice, whose
// owners sharedBlocks then names. Metadata that fails is refused with an
// *inconsistentError, or with Options.OpenDamaged kept: the check is
// returned with its findings (the allocator then holds each block claimed
// once). Without findings it returns nil.
func (v *Volume) checkLoaded() (*metaCheck, error) {
	pr := v.progress(PhaseSpace, v.inodes.used)
	m := v.checkMeta(false)
	used := append([]alloc.Extent(nil), v.fixed...)
	used = append(used, v.ckptExtents()...)
	v.inodes.all(func(_ Ino, n *inode) bool {
		used = append(used, physical(n.extents())...)
		pr.step()
		return true
	})
	pr.end()
	m.findings = append(slices.Clone(v.dropped), m.findings...)
	s, err := newSpace(v.sb.Blocks, v.dataStart, used, v.blockSize)
	if err != nil {
		m.findings = append(m.findings, v.sharedBlocks()...)
		if !slices.ContainsFunc(m.findings, func(f finding) bool { return f.kind == findBlocks }) {
			m.findings = append(m.findings, finding{Problem: Problem{What: "free space: " + err.Error()}, kind: findBlocks})
		}
	}
	if len(m.findings) == 0 {
		v.space = s
		if v.sums != nil {
			v.sums = v.sums.only(used)
		}
		return nil, nil
	}
	if !v.opts.OpenDamaged {
		return nil, &inconsistentError{what: "metadata", findings: m.findings}
	}
	if s == nil {
		used = union(used, v.sb.Blocks) // bounded and disjoint, for the sums below too
		if s, err = newSpace(v.sb.Blocks, v.dataStart, used, v.blockSize); err != nil {
			return nil, fmt.Errorf("free space: %w (%w)", ErrCorrupt, err)
		}
	}
	v.space = s
	if v.sums != nil {
		v.sums = v.sums.only(used)
	}
	return m, nil
}

// freeOrphans frees inodes a crash left without links (unlinked while
// open). In metadata opened damaged it leaves an inode that still has a
// name, or damaged data, to Repair.
func (v *Volume) freeOrphans(damage *metaCheck) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	var keep map[Ino]bool
	if damage != nil {
		keep = map[Ino]bool{}
		for _, f := range damage.findings {
			if f.damagesFile() {
				keep[f.Ino] = true
			}
		}
	}
	var orphans []Ino
	v.inodes.all(func(ino Ino, n *inode) bool {
		if n.nlink == 0 && (damage == nil || damage.found[ino] == 0 && !keep[ino]) {
			orphans = append(orphans, ino)
		}
		return true
	})
	pr := &progress{} // silent: no orphans after a clean close
	if len(orphans) > 0 {
		pr = v.progress(PhaseOrphans, uint64(len(orphans)))
		defer pr.end()
	}
	for _, ino := range orphans {
		if _, err := v.commit(format.InodeFreeRec{Ino: uint64(ino)}); err != nil {
			return err
		}
		pr.step()
	}
	v.recovery.Orphans = orphans
	if len(orphans) > 0 {
		v.opts.Logger.WithField("count", len(orphans)).Info("freed orphan inodes")
	}
	return nil
}

// freeUnlinked frees, at Close, every inode without links that no entry
// names: what kept it (an open handle, a kernel reference whose FORGET
// the unmount never delivered, an O_TMPFILE never linked) ends with the
// mount, and a checkpoint marked clean holds no orphan (v.mu held for
// writing). An inode without links that an entry still names is damage,
// left to the checkpoint's checks to refuse: freeing it would make the
// name point at whatever takes its number next. A volume that takes no
// changes (read-only, stopped, opened damaged) keeps them all for the
// next Open. The entries are scanned only when there is an inode to
// free.
func (v *Volume) freeUnlinked() error {
	if v.refuseChange() != nil || v.damagedOpen() {
		return nil
	}
	unlinked := map[Ino]bool{}
	v.inodes.all(func(ino Ino, n *inode) bool {
		if n.nlink == 0 {
			unlinked[ino] = true
		}
		return true
	})
	if len(unlinked) == 0 {
		return nil
	}
	v.inodes.all(func(_ Ino, n *inode) bool {
		if d := n.dirOf(); d != nil {
			for _, e := range d.ents {
				if e.name != "" {
					delete(unlinked, e.ino)
				}
			}
		}
		return len(unlinked) > 0
	})
	for _, ino := range slices.Sorted(maps.Keys(unlinked)) {
		if _, err := v.commit(format.InodeFreeRec{Ino: uint64(ino)}); err != nil {
			return fmt.Errorf("close: freeing unlinked inode %d: %w", ino, err)
		}
	}
	return nil
}

// Recovery reports what Open did to make the volume consistent: whether it
// had been closed cleanly, how many log transactions it replayed and which
// orphan inodes it freed. fsck notes orphans freed after a crash (the
// normal state when files were unlinked while open) and reports any in a
// cleanly closed volume as problems.
func (v *Volume) Recovery() Recovery {
	r := v.recovery
	r.Orphans = slices.Clone(r.Orphans)
	r.Inconsistent = slices.Clone(r.Inconsistent)
	if d := r.Damaged; d != nil {
		c := *d
		r.Damaged = &c
	}
	if d := r.LogDamage; d != nil {
		c := *d
		r.LogDamage = &c
	}
	return r
}

// Close writes back every dirty file, writes a checkpoint, marks the volume
// clean and stops. Nothing written before Close is lost; the next Open
// reads the checkpoint and replays nothing. Close is safe to call more
// than once and concurrently: the first call does the work, and every
// other waits until it is done and gives ErrClosed. Close does not close
// the device. A volume a device error stopped (Failed) is closed without
// writing anything, and Close says so.
func (v *Volume) Close() error {
	first := false
	v.closeOnce.Do(func() {
		first = true
		v.closeErr = v.close()
	})
	if !first {
		return opErr("close", "", ErrClosed)
	}
	return v.closeErr
}

// Discard closes the volume without writing anything more: no
// write-back, no checkpoint, no clean flag. It is for a volume on a
// device whose writes are thrown away (fsck and info read through a
// copy-on-write overlay), where Close's checkpoint would be work for
// nothing. Dirty data is dropped; the device keeps what it held, and
// the next Open of it replays the log as after a crash. Discard and
// Close are done once between them: any later call gives ErrClosed.
func (v *Volume) Discard() error {
	first := false
	v.closeOnce.Do(func() {
		first = true
		v.stopCommitter()
		v.stopFlusher()
		v.mu.Lock()
		defer v.mu.Unlock()
		v.closed = true
		v.closeErr = v.j.Close()
		v.acct.release(v)
		v.space.close()
	})
	if !first {
		return opErr("close", "", ErrClosed)
	}
	return v.closeErr
}

// close is Close's work, done once.
func (v *Volume) close() error {
	v.stopCommitter()
	v.stopFlusher()
	if v.failed.Load() != nil {
		return v.closeStopped()
	}
	errWB := v.writeBackAll()
	v.mu.Lock()
	defer v.mu.Unlock()
	err := v.freeUnlinked()
	v.closed = true
	if cerr := v.checkpoint(errWB == nil && err == nil); err == nil {
		err = cerr
	}
	if cerr := v.j.Close(); err == nil {
		err = cerr
	}
	if n := v.PinnedReads(); n > 0 {
		// The frees behind them are lost to this mount only: Open
		// rebuilds free space from the extents in use.
		v.opts.Logger.WithField("reads", n).Error("volume closed with read plans not done")
	}
	v.acct.release(v)
	v.space.close()
	return errors.Join(errWB, err)
}

package journal

import (
	"errors"
	"fmt"

	"github.com/sirupsen/logrus"

	"github.com/smallfs/smallfs/accounting"
	"github.com/smallfs/smallfs/fs/format"
	"github.com/smallfs/smallfs/internal/nolog"
)

// Position is a place in the log: a block within the region, and the chain
// value (CRC of the chunk before it) that the chunk there must carry.
type Position struct {
	Block uint64
	Prev  uint32
}

// DefaultChunkSize is the payload bytes after which an open chunk is sealed
// even if nobody syncs: large enough that a busy log writes big chunks,
// small enough that a periodic commit writes little.
const DefaultChunkSize = 256 << 10

// Options describe the log region and where to continue. Replay takes
// Region, BlockSize, Head and NextSeq; Open takes them all.
type Options struct {
	// Region is the log's blocks on the device (Superblock.Log).
	Region format.BlockRange
	// BlockSize is the filesystem block size (Superblock.BlockSize).
	BlockSize uint32
	// Head is where the next chunk goes (for Replay: where replay starts,
	// from Superblock.LogHead and LogPrev; for Open: what Replay returned).
	Head Position
	// NextSeq is the sequence number of the next transaction (for Replay:
	// Superblock.LogSeq; for Open: what Replay returned).
	NextSeq uint64
	// Tail is the oldest block still needed: Superblock.LogHead of the
	// newest durable superblock. Open only.
	Tail uint64
	// ChunkSize is the payload bytes at which an open chunk is sealed;
	// 0 means DefaultChunkSize. A larger transaction gets a larger chunk.
	ChunkSize int
	// DataSums is the volume's format.FeatureDataSums. A commit then
	// writes its chunks and flushes once, without the data barrier before
	// them, and marks its first chunk (format.ChunkFlagCommit); replay
	// checks the data that the last commit's DataSumRecs name and drops
	// that commit from its first chunk whose data did not reach the
	// device. The writer must then not reuse blocks freed in a commit
	// until a later commit is durable (see doc.go, "One flush per commit").
	DataSums bool
	// Salvage makes replay accept a log damaged before its end (see
	// ErrLogDamaged): it keeps the transactions before the damage, ends
	// the log there, reports the damage to OnDamaged and returns no
	// error. Replay only.
	Salvage bool
	// Durable is a sequence below which every transaction was durable
	// when the superblock replay starts from was written
	// (Superblock.LogDurable; 0 or NextSeq: nothing known): a chain that
	// ends before it is damage, and the data of those transactions is not
	// checked. Replay only.
	Durable uint64
	// Writers are the nonces of journal instances known, from
	// superblocks, to have appended to the log after Head
	// (Superblock.LogWriter). A later commit of one of them past where the
	// chain ends witnesses damage there, as one by the instance that wrote
	// the last chunk accepted does. Replay only.
	Writers []uint32
	// OnDamaged, if set, is called by a salvaging replay with the damage
	// it accepted. Replay only.
	OnDamaged func(Damage)
	// OnDropped, if set, is called by replay when it drops the
	// transactions of a last commit whose data did not land: n of them,
	// from sequence from on. Replay only.
	OnDropped func(from, n uint64)
	// OnDurable, if set, is called with the highest durable sequence after
	// each group commit, in order, from the syncing goroutine, without the
	// journal's lock held. It may call Append; it must not call Sync.
	OnDurable func(seq uint64)
	// Logger receives lifecycle and failure messages; nil discards them.
	Logger logrus.FieldLogger
	// Accounting receives the journal's memory and counters (layer
	// "journal"). Default accounting.Default. Open only.
	Accounting *accounting.Registry
}

// fill validates opts and fills defaults, reporting every bad field.
func (o *Options) fill() error {
	var errs []error
	if !format.ValidBlockSize(o.BlockSize) {
		errs = append(errs, fmt.Errorf("block size %d not a power of two in [%d, %d]", o.BlockSize, format.MinBlockSize, format.MaxBlockSize))
	}
	if o.Region.Len < 4 || o.Region.Start == 0 {
		errs = append(errs, fmt.Errorf("region %d+%d: need at least 4 blocks, not at block 0", o.Region.Start, o.Region.Len))
	}
	if o.Head.Block >= o.Region.Len && o.Region.Len > 0 {
		errs = append(errs, fmt.Errorf("head block %d outside the region of %d", o.Head.Block, o.Region.Len))
	}
	if o.Tail >= o.Region.Len && o.Region.Len > 0 {
		errs = append(errs, fmt.Errorf("tail block %d outside the region of %d", o.Tail, o.Region.Len))
	}
	if o.NextSeq == 0 {
		errs = append(errs, errors.New("next sequence 0 (sequences start at 1)"))
	}
	if o.ChunkSize < 0 {
		errs = append(errs, fmt.Errorf("chunk size %d", o.ChunkSize))
	}
	if len(errs) > 0 {
		return fmt.Errorf("journal: %w: %w", ErrBadArgument, errors.Join(errs...))
	}
	if o.ChunkSize == 0 {
		o.ChunkSize = DefaultChunkSize
	}
	if o.Accounting == nil {
		o.Accounting = accounting.Default
	}
	if o.Logger == nil {
		o.Logger = nolog.New()
	}
	return nil
}

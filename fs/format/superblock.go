package format

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/smallfs/smallfs/fs/device"
)

// Superblock is the root of a volume: where the log and the checkpoint are
// and how to start replay. Two copies (slots A and B) alternate; the valid
// one with the higher generation is current.
type Superblock struct {
	Version    uint32 // format version; WriteSuperblock sets FormatVersion
	Features   uint64 // incompatible feature bits; see KnownFeatures
	UUID       [16]byte
	BlockSize  uint32
	Blocks     uint64 // filesystem size in blocks
	Generation uint64 // bumped by every write; slot = Generation % 2
	Flags      uint32 // FlagClean, FlagSumsPartial
	Checkpoint uint64 // block of the checkpoint header; 0: none (empty volume)
	Log        BlockRange
	LogHead    uint64 // block within Log where replay starts
	LogSeq     uint64 // sequence number of the first transaction to replay
	LogPrev    uint32 // checksum chain value of the chunk before LogHead
	NextIno    uint64 // hint: no inode number at or above it is in use

	// LogDurable and LogWriter tell damage at the start of replay from
	// the end of the log. Every transaction below LogDurable was durable
	// when this superblock was written (replayed by the mount that wrote
	// it, or committed), so a chain that ends before it is damaged; the
	// journal instance whose chunks carry the nonce LogWriter appends from
	// there on, so its later commits witness damage to the chunks before
	// them. LogWriter 0: not recorded (images written before the fields);
	// LogDurable is then LogSeq. Stored as a 32-bit count above LogSeq,
	// capped: a lower bound stays true.
	LogDurable uint64
	LogWriter  uint32

	// Slot is where ReadSuperblock found this copy (0 = A, 1 = B); not
	// stored.
	Slot int
}

// BlockRange is Len blocks from block Start.
type BlockRange struct {
	Start, Len uint64
}

// End is the first block after the range.
func (r BlockRange) End() uint64 { return r.Start + r.Len }

// Clean reports whether FlagClean is set.
func (sb *Superblock) Clean() bool { return sb.Flags&FlagClean != 0 }

// Encode writes the 128-byte encoding of sb into b (len(b) >= SuperblockSize).
func (sb *Superblock) Encode(b []byte) {
	le := binary.LittleEndian
	le.PutUint64(b[0:], SuperblockMagic)
	le.PutUint32(b[8:], sb.Version)
	le.PutUint32(b[12:], SuperblockSize)
	le.PutUint64(b[16:], sb.Features)
	copy(b[24:40], sb.UUID[:])
	le.PutUint32(b[40:], sb.BlockSize)
	le.PutUint32(b[44:], sb.Flags)
	le.PutUint64(b[48:], sb.Blocks)
	le.PutUint64(b[56:], sb.Generation)
	le.PutUint64(b[64:], sb.Checkpoint)
	le.PutUint64(b[72:], sb.Log.Start)
	le.PutUint64(b[80:], sb.Log.Len)
	le.PutUint64(b[88:], sb.LogHead)
	le.PutUint64(b[96:], sb.LogSeq)
	le.PutUint32(b[104:], sb.LogPrev)
	le.PutUint32(b[108:], sb.LogWriter)
	le.PutUint64(b[112:], sb.NextIno)
	le.PutUint32(b[120:], uint32(min(sb.LogDurable-min(sb.LogDurable, sb.LogSeq), math.MaxUint32)))
	le.PutUint32(b[124:], Checksum(b[:124]))
}

// DecodeSuperblock decodes one slot. Errors: ErrNotSmallfs (no magic),
// ErrNewerVersion, ErrUnknownFeature, or ErrCorrupt naming the bad field.
func DecodeSuperblock(b []byte) (*Superblock, error) {
	le := binary.LittleEndian
	if len(b) < 16 || le.Uint64(b) != SuperblockMagic {
		return nil, ErrNotSmallfs
	}
	sb := &Superblock{Version: le.Uint32(b[8:])}
	if sb.Version > FormatVersion {
		return nil, fmt.Errorf("format: superblock version %d, this smallfs reads up to %d: %w", sb.Version, FormatVersion, ErrNewerVersion)
	}
	if size := le.Uint32(b[12:]); sb.Version == 0 || size != SuperblockSize || len(b) < SuperblockSize {
		return nil, fmt.Errorf("format: superblock version %d, length %d, %d bytes: %w", sb.Version, size, len(b), ErrCorrupt)
	}
	if want, got := Checksum(b[:124]), le.Uint32(b[124:]); want != got {
		return nil, fmt.Errorf("format: superblock checksum %#08x, computed %#08x: %w", got, want, ErrCorrupt)
	}
	sb.Features = le.Uint64(b[16:])
	copy(sb.UUID[:], b[24:40])
	sb.BlockSize = le.Uint32(b[40:])
	sb.Flags = le.Uint32(b[44:])
	sb.Blocks = le.Uint64(b[48:])
	sb.Generation = le.Uint64(b[56:])
	sb.Checkpoint = le.Uint64(b[64:])
	sb.Log = BlockRange{le.Uint64(b[72:]), le.Uint64(b[80:])}
	sb.LogHead = le.Uint64(b[88:])
	sb.LogSeq = le.Uint64(b[96:])
	sb.LogPrev = le.Uint32(b[104:])
	sb.NextIno = le.Uint64(b[112:])
	sb.LogWriter = le.Uint32(b[108:])
	sb.LogDurable = sb.LogSeq + uint64(le.Uint32(b[120:]))
	if sb.LogDurable < sb.LogSeq {
		return nil, fmt.Errorf("format: superblock log seq %d overflows: %w", sb.LogSeq, ErrCorrupt)
	}
	if unknown := sb.Features &^ KnownFeatures; unknown != 0 {
		return nil, fmt.Errorf("format: superblock features %#x: %w", unknown, ErrUnknownFeature)
	}
	if why := sb.check(); why != "" {
		return nil, fmt.Errorf("format: superblock: %s: %w", why, ErrCorrupt)
	}
	return sb, nil
}

// check reports the first field that cannot describe a volume.
func (sb *Superblock) check() string {
	switch {
	case !ValidBlockSize(sb.BlockSize):
		return fmt.Sprintf("block size %d", sb.BlockSize)
	case sb.Flags&^knownFlags != 0:
		return fmt.Sprintf("unknown flags %#x", sb.Flags&^knownFlags)
	case sb.Blocks > 1<<63/uint64(sb.BlockSize):
		return fmt.Sprintf("%d blocks", sb.Blocks)
	}
	data := DataStart(sb.BlockSize)
	switch {
	case sb.Log.Len < 2 || sb.Log.Start < data || sb.Log.End() > sb.Blocks || sb.Log.End() < sb.Log.Start:
		return fmt.Sprintf("log region %d+%d outside blocks [%d, %d)", sb.Log.Start, sb.Log.Len, data, sb.Blocks)
	case sb.LogHead >= sb.Log.Len:
		return fmt.Sprintf("log head %d past log length %d", sb.LogHead, sb.Log.Len)
	case sb.Checkpoint != 0 && (sb.Checkpoint < data || sb.Checkpoint >= sb.Blocks):
		return fmt.Sprintf("checkpoint block %d outside [%d, %d)", sb.Checkpoint, data, sb.Blocks)
	case sb.Checkpoint >= sb.Log.Start && sb.Checkpoint < sb.Log.End():
		return fmt.Sprintf("checkpoint block %d inside the log", sb.Checkpoint)
	}
	return ""
}

// ReadSuperblock reads both slots and returns the valid one with the higher
// generation. A slot of a newer version refuses the device even if the other
// is readable: the newer writer may rely on it. A device smaller than the
// filesystem its superblocks describe gives a *ShrunkError.
func ReadSuperblock(dev device.Device) (*Superblock, error) {
	sb, _, err := ReadSuperblocks(dev)
	return sb, err
}

// ReadSuperblocks is ReadSuperblock that also returns the other slot's
// superblock when it is valid too (else nil). The two alternate, so the
// other one names the checkpoint written before the current one's (or the
// same one): the volume falls back to it when the current checkpoint is
// damaged.
func ReadSuperblocks(dev device.Device) (cur, other *Superblock, err error) {
	size := dev.Size()
	slots := 2
	if size < 2*SuperblockSlotSize {
		if size < SuperblockSize {
			return nil, nil, fmt.Errorf("format: device of %d bytes has no room for superblocks: %w", size, ErrNotSmallfs)
		}
		slots = 1 // an image cut short may still hold slot A: say so if it does
	}
	var (
		sbs    [2]*Superblock
		errs   [2]error
		shrunk *ShrunkError
		buf    = make([]byte, SuperblockSize)
	)
	for slot := range slots {
		if _, err := dev.ReadAt(buf, int64(slot)*SuperblockSlotSize); err != nil {
			return nil, nil, fmt.Errorf("format: read superblock %c: %w", 'A'+slot, err)
		}
		sb, err := DecodeSuperblock(buf)
		if err == nil && uint64(size)/uint64(sb.BlockSize) < sb.Blocks {
			e := &ShrunkError{Size: size, Want: int64(sb.Blocks * uint64(sb.BlockSize))}
			if shrunk == nil || e.Want > shrunk.Want {
				shrunk = e
			}
			err = fmt.Errorf("format: superblock says %d blocks of %d bytes, device has %d bytes: %w", sb.Blocks, sb.BlockSize, size, ErrCorrupt)
		}
		if errors.Is(err, ErrNewerVersion) || errors.Is(err, ErrUnknownFeature) {
			return nil, nil, fmt.Errorf("superblock %c: %w", 'A'+slot, err)
		}
		errs[slot] = err
		if err == nil {
			sb.Slot = slot
			sbs[slot] = sb
		}
	}
	switch {
	case sbs[0] != nil && sbs[1] != nil:
		if sbs[1].Generation > sbs[0].Generation {
			return sbs[1], sbs[0], nil
		}
		return sbs[0], sbs[1], nil
	case sbs[0] != nil:
		return sbs[0], nil, nil
	case sbs[1] != nil:
		return sbs[1], nil, nil
	case shrunk != nil:
		return nil, nil, shrunk
	case slots == 1:
		return nil, nil, fmt.Errorf("format: device of %d bytes has no room for superblocks: %w", size, ErrNotSmallfs)
	case errors.Is(errs[0], ErrNotSmallfs) && errors.Is(errs[1], ErrNotSmallfs):
		return nil, nil, fmt.Errorf("format: no smallfs magic in either superblock slot: %w", ErrNotSmallfs)
	}
	return nil, nil, fmt.Errorf("format: superblock A: %v; superblock B: %v: %w", errs[0], errs[1], ErrNoValidSuperblock)
}

// ShrunkError is ReadSuperblock's error for a device smaller than the
// filesystem on it: an image file cut short (copied onto a full disk,
// truncated by mistake). Nothing past the end is readable; growing the
// file back brings back its size, and past the cut zeros, not the data
// that was there. It wraps
// ErrNoValidSuperblock and ErrCorrupt, which it replaces: neither slot
// describes the device as it is.
type ShrunkError struct {
	Size int64 // bytes the device has
	Want int64 // bytes the filesystem spans (Blocks * BlockSize)
}

func (e *ShrunkError) Error() string {
	return fmt.Sprintf("image is %d bytes but the filesystem is %d bytes: it was cut short; truncate -s %d brings back its size, not the data cut off", e.Size, e.Want, e.Want)
}

func (e *ShrunkError) Unwrap() []error { return []error{ErrNoValidSuperblock, ErrCorrupt} }

// WriteSuperblock makes sb current: it flushes (so everything sb points at
// is durable first), bumps sb.Generation, writes the slot of the new
// generation, which is the other one, and flushes again. On error the slot
// may be torn but the previous superblock still stands, and sb is unchanged.
func WriteSuperblock(dev device.Device, sb *Superblock) error {
	next := *sb
	next.Version = FormatVersion
	next.Generation++
	if err := validateForWrite(dev, &next); err != nil {
		return err
	}
	if err := dev.Flush(); err != nil {
		return fmt.Errorf("format: flush before superblock: %w", err)
	}
	if err := writeSlot(dev, &next); err != nil {
		return err
	}
	if err := dev.Flush(); err != nil {
		return fmt.Errorf("format: flush superblock: %w", err)
	}
	next.Slot = int(next.Generation % 2)
	*sb = next
	return nil
}

// InitSuperblocks writes sb to both slots (generations g+1 and g+2), so no
// superblock of an earlier filesystem on the device can win, then flushes.
// mkfs uses it; sb ends at the newer generation.
func InitSuperblocks(dev device.Device, sb *Superblock) error {
	next := *sb
	next.Version = FormatVersion
	for range 2 {
		next.Generation++
		if err := validateForWrite(dev, &next); err != nil {
			return err
		}
		if err := writeSlot(dev, &next); err != nil {
			return err
		}
	}
	if err := dev.Flush(); err != nil {
		return fmt.Errorf("format: flush superblocks: %w", err)
	}
	next.Slot = int(next.Generation % 2)
	*sb = next
	return nil
}

func validateForWrite(dev device.Device, sb *Superblock) error {
	why := sb.check()
	if why == "" && sb.Features&^KnownFeatures != 0 {
		why = fmt.Sprintf("unknown features %#x", sb.Features&^KnownFeatures)
	}
	if why == "" && uint64(dev.Size())/uint64(sb.BlockSize) < sb.Blocks {
		why = fmt.Sprintf("%d blocks do not fit a device of %d bytes", sb.Blocks, dev.Size())
	}
	if why != "" {
		return fmt.Errorf("format: superblock: %s: %w", why, ErrInvalid)
	}
	return nil
}

func writeSlot(dev device.Device, sb *Superblock) error {
	buf := make([]byte, SuperblockSize)
	sb.Encode(buf)
	slot := sb.Generation % 2
	if _, err := dev.WriteAt(buf, int64(slot)*SuperblockSlotSize); err != nil {
		return fmt.Errorf("format: write superblock %c: %w", 'A'+rune(slot), err)
	}
	return nil
}

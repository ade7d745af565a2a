package format

import "errors"

var (
	// ErrCorrupt is returned, wrapped with what was wrong and where, by every
	// decoder of on-disk bytes that are not a valid encoding: bad magic in a
	// place that must hold one, bad checksum, impossible field, truncation.
	ErrCorrupt = errors.New("corrupt on-disk data")
	// ErrNotSmallfs is returned by ReadSuperblock when neither slot holds
	// the smallfs magic: the device was never formatted.
	ErrNotSmallfs = errors.New("not a smallfs device")
	// ErrNewerVersion is returned when a superblock or checkpoint was
	// written by a newer format version than this code understands.
	ErrNewerVersion = errors.New("newer format version")
	// ErrUnknownFeature is returned when a superblock sets feature bits this
	// code does not know: it cannot safely read the volume.
	ErrUnknownFeature = errors.New("unknown format feature")
	// ErrNoValidSuperblock is returned by ReadSuperblock when both slots hold
	// the magic but neither is valid; the message says why each failed.
	ErrNoValidSuperblock = errors.New("no valid superblock")
	// ErrInvalid is returned by encoders (Validate, WriteSuperblock,
	// CheckpointWriter.Add) for a value that breaks a format limit. Nothing
	// is written.
	ErrInvalid = errors.New("invalid value for the on-disk format")
)

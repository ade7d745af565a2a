package bench

import "errors"

var (
	// ErrUsage is returned when a command line or a Workload is invalid;
	// the wrapping error names every bad field.
	ErrUsage = errors.New("bad usage")

	// ErrUnsupported is returned by Run.Do when the filesystem under test
	// refuses an operation as not supported (ENOTSUP for xattrs): the
	// operation is reported as "n/a" for that target, not as a failure.
	ErrUnsupported = errors.New("operation not supported by the filesystem")

	// ErrVerify is returned when a file read back holds other bytes, or
	// another count of entries is listed, than the workload wrote: the
	// filesystem under test lost or corrupted data.
	ErrVerify = errors.New("verification failed")

	// ErrTarget is returned when a target cannot be set up or torn down:
	// an image cannot be made or mounted, a daemon does not start or stop.
	ErrTarget = errors.New("target failed")

	// ErrCorrupt is returned when fsck finds problems in a smallfs image
	// after a run: the run failed, whatever its speed.
	ErrCorrupt = errors.New("image not clean after the run")

	// ErrInterrupted is returned when the run was cancelled (Ctrl-C).
	ErrInterrupted = errors.New("interrupted")
)

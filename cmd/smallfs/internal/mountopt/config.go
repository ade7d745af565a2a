package mountopt

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"

	sfuse "github.com/smallfs/smallfs/fs/fuse"
	"github.com/smallfs/smallfs/fs/volume"
)

// Config is everything a mount is told by its options. Defaults returns
// the starting point; each field comment states its default.
type Config struct {
	// ReadOnly opens the volume read-only and mounts with MS_RDONLY
	// (option ro). Default false.
	ReadOnly bool
	// Flags are the MS_* flags for the kernel, ReadOnly's MS_RDONLY
	// included. Default MS_NODEV|MS_NOSUID, as FUSE mounts have always
	// been; dev and suid clear them.
	Flags uintptr
	// AllowOther lets users other than the mounter reach the files
	// (allow_other). Default false. The kernel then checks permissions
	// (default_permissions).
	AllowOther bool
	// Permissions is who checks mode bits: fs/fuse Options.Permissions.
	// Default auto: the kernel, wherever anyone but root can reach the
	// mount; default_permissions makes it the kernel always.
	Permissions sfuse.Permissions
	// FsName is the source column of /proc/mounts and df (fsname=).
	// Default: the device path as given.
	FsName string
	// CommitInterval bounds how much a crash can lose without fsync
	// (commit_interval=). Default 5s.
	CommitInterval time.Duration
	// EntryTimeout, AttrTimeout and NegativeTimeout are how long the
	// kernel caches names, attributes and absent names (entry_timeout=,
	// attr_timeout=, negative_timeout=). smallfs is the only writer of its
	// device, so long timeouts are safe. Default 1h each.
	EntryTimeout, AttrTimeout, NegativeTimeout time.Duration
	// NoOpen makes the kernel open and close regular files without a
	// round trip (no_open=on): fs/fuse Options.NoOpen. Default off.
	NoOpen bool
	// Uring chooses io_uring or /dev/fuse for the requests (uring=):
	// fs/fuse Options.Uring. Default auto: io_uring where the kernel
	// offers it.
	Uring sfuse.UringMode
	// FlushOnClose writes data back at every close(2) so that close
	// reports write-back errors (flush_on_close=): fs/fuse
	// Options.FlushOnClose. Default off: errors reach fsync, as on ext4.
	FlushOnClose bool
	// Procs is how many CPUs run the daemon's Go code at once
	// (GOMAXPROCS, procs=). Default 0, "auto": every CPU and one more
	// (AutoProcs).
	Procs int
	// GCPercent is the daemon's garbage collection target (GOGC,
	// gc_percent=). Default 0, "auto": Go's, 100 unless GOGC is set in
	// the environment.
	GCPercent int
	// IobufPool pools the volume's dirty-data buffers (iobuf_pool=); off
	// allocates each one, to measure what the pools gain. Default on.
	IobufPool bool
	// Readahead is the largest window the volume prefetches ahead of a
	// reader walking files in device order (readahead=): fs/volume
	// Options.Readahead, -1 for off. Default volume.DefaultReadahead.
	Readahead int64
	// ZeroAhead writes zeros over a 1 MiB region of an image file's
	// fallocated (unwritten) blocks before the first log or fsync-ed write
	// into it (zero_ahead=): fs/device ZeroRegion. Default on.
	ZeroAhead bool
	// LogLevel is the lowest level logged (log_level=). Default info.
	LogLevel logrus.Level
	// LogFormat is "text" or "json" (log_format=). Default text.
	LogFormat string
	// LogFile is where a background daemon logs: a path, or "syslog"
	// (log_file=). Empty means the default file (see the command's manual);
	// a foreground mount logs to stderr unless it is set.
	LogFile string
	// Debug logs every FUSE request and sets LogLevel to debug (debug, -d).
	// Default false.
	Debug bool
	// MetricsAddr, when set, is a loopback host:port where the daemon
	// serves Prometheus metrics (metrics_addr=). Default off.
	MetricsAddr string
	// Remount changes a running mount (option remount, from mount -o
	// remount): its ro or rw and generic flags; see RemountFlags. The
	// other options are accepted and change nothing. Default false.
	Remount bool
	// mentioned are the Flags an option set or cleared explicitly.
	mentioned uintptr
	// kernelListed are the options of the kernel's own listing given
	// (user_id=0, ...): fine in a remount, refused by Check otherwise.
	kernelListed []string
	// Ignored lists the options accepted without effect (fstab and mount(8)
	// bookkeeping such as noauto, nofail, x-systemd.*), for the log.
	Ignored []string
}

// Defaults returns the configuration before any option is applied.
func Defaults() Config {
	return Config{
		Flags:           syscall.MS_NODEV | syscall.MS_NOSUID,
		CommitInterval:  5 * time.Second,
		EntryTimeout:    time.Hour,
		AttrTimeout:     time.Hour,
		NegativeTimeout: time.Hour,
		Uring:           sfuse.UringAuto,
		IobufPool:       true,
		ZeroAhead:       true,
		Readahead:       volume.DefaultReadahead,
		LogLevel:        logrus.InfoLevel,
		LogFormat:       "text",
	}
}

// Apply applies one comma-separated option list (the argument of one -o)
// in order; a later option overrides an earlier one, as with mount(8).
// Values may be double-quoted to hold commas (comment="a,b"). Every bad
// option is reported, joined in one error; c changes only if there is none.
func (c *Config) Apply(list string) error {
	next := *c
	next.Ignored = slices.Clone(c.Ignored)
	next.kernelListed = slices.Clone(c.kernelListed)
	var errs []error
	for _, opt := range split(list) {
		if err := next.applyOne(opt); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return joinErrors(errs)
	}
	*c = next
	return nil
}

func (c *Config) applyOne(opt string) error {
	if opt == "" {
		return nil
	}
	if isIgnoredPrefix(opt) {
		c.Ignored = append(c.Ignored, opt)
		return nil
	}
	if g, ok := generics[opt]; ok {
		c.applyGeneric(opt, g)
		return nil
	}
	name, value, hasValue := strings.Cut(opt, "=")
	if kernelListed[name] && hasValue {
		c.kernelListed = append(c.kernelListed, opt)
		return nil
	}
	s, ok := specByName(name)
	if !ok {
		return fmt.Errorf("%q: %w", opt, ErrUnknownOption)
	}
	if s.Value == "" && hasValue {
		return fmt.Errorf("%q: %s takes no value: %w", opt, name, ErrBadValue)
	}
	if s.Value != "" && !hasValue {
		return fmt.Errorf("%q: %s needs a value (%s=%s): %w", opt, name, name, s.Value, ErrBadValue)
	}
	if err := s.apply(c, value); err != nil {
		return fmt.Errorf("%q: %w: %w", opt, ErrBadValue, err)
	}
	return nil
}

func (c *Config) applyGeneric(opt string, g generic) {
	flag := g.flag
	if flag&atimeModes != 0 && g.effect == setFlag {
		flag = atimeModes // one mode at a time
	}
	c.mentioned |= flag
	switch g.effect {
	case ignored:
		c.Ignored = append(c.Ignored, opt)
	case setFlag:
		c.Flags = c.Flags&^flag | g.flag
	case clearFlag:
		c.Flags &^= g.flag
	case readOnly:
		c.ReadOnly = true
		c.Flags |= g.flag
	case readWrite:
		c.ReadOnly = false
		c.Flags &^= g.flag
	case remount:
		c.Remount = true
	}
}

// RemountFlags are the MS_* flags for mount(2) with MS_REMOUNT (without
// it) on a mount whose flags are now current (KernelFlags of its
// mountinfo line). The kernel sets every per-mount and superblock flag
// from the call, so each flag no option named is current's, which keeps
// what the mount had: mount(8) hands back the mount's own options, and
// `smallfs mount -o remount,ro` alone must not drop dev or sync. Atime
// flags are left out when no option names one: the kernel then keeps the
// mount's.
func (c Config) RemountFlags(current uintptr) uintptr {
	f := current&^c.mentioned | c.Flags&c.mentioned
	if c.mentioned&atimeFlags == 0 {
		return f &^ atimeFlags
	}
	if f&(syscall.MS_NOATIME|syscall.MS_RELATIME) != 0 {
		f &^= syscall.MS_STRICTATIME
	}
	return f
}

// KernelOptions renders Flags as the option names fusermount3 and
// mount(8) understand, in a fixed order: ro or rw first, then the set
// flags. Dev and suid are spelled out when allowed, because FUSE helpers
// otherwise add nodev and nosuid.
func (c Config) KernelOptions() []string {
	out := []string{"rw"}
	if c.Flags&syscall.MS_RDONLY != 0 {
		out[0] = "ro"
	}
	for _, name := range kernelOrder {
		g := generics[name]
		set := c.Flags&g.flag != 0
		if (g.effect == setFlag && set) || (g.effect == clearFlag && !set && alwaysSpelled[name]) {
			out = append(out, name)
		}
	}
	return out
}

// kernelOrder fixes the order of KernelOptions.
var kernelOrder = []string{
	"dev", "nodev", "suid", "nosuid", "noexec", "noatime", "nodiratime",
	"relatime", "strictatime", "lazytime", "sync", "dirsync",
}

var alwaysSpelled = map[string]bool{"dev": true, "suid": true}

// String is the effective configuration as one option list, for the log
// line a mount writes once.
func (c Config) String() string {
	parts := c.KernelOptions()
	if c.AllowOther {
		parts = append(parts, "allow_other")
	}
	if c.Permissions == sfuse.PermissionsKernel {
		parts = append(parts, "default_permissions")
	}
	if c.Debug {
		parts = append(parts, "debug")
	}
	if c.FsName != "" {
		parts = append(parts, "fsname="+c.FsName)
	}
	parts = append(parts,
		"commit_interval="+c.CommitInterval.String(),
		"entry_timeout="+c.EntryTimeout.String(),
		"attr_timeout="+c.AttrTimeout.String(),
		"negative_timeout="+c.NegativeTimeout.String(),
		"no_open="+onOff(c.NoOpen),
		"uring="+c.Uring.String(),
		"flush_on_close="+onOff(c.FlushOnClose),
		"procs="+procsString(c.Procs),
		"gc_percent="+procsString(c.GCPercent),
		"iobuf_pool="+onOff(c.IobufPool),
		"readahead="+windowString(c.Readahead),
		"zero_ahead="+onOff(c.ZeroAhead),
		"log_level="+c.LogLevel.String(),
		"log_format="+c.LogFormat)
	if c.LogFile != "" {
		parts = append(parts, "log_file="+c.LogFile)
	}
	if c.MetricsAddr != "" {
		parts = append(parts, "metrics_addr="+c.MetricsAddr)
	}
	return strings.Join(parts, ",")
}

// windowString is readahead='s value as parseWindow reads it.
func windowString(n int64) string {
	switch {
	case n < 0:
		return "off"
	case n%(1<<20) == 0:
		return strconv.FormatInt(n>>20, 10) + "M"
	case n%(1<<10) == 0:
		return strconv.FormatInt(n>>10, 10) + "K"
	}
	return strconv.FormatInt(n, 10)
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// maxSeconds keeps a parsed time far from time.Duration's overflow.
const maxSeconds = 1e9

// parseSeconds reads a time the way FUSE options write it (seconds, maybe
// fractional: 2.5) or as a Go duration (500ms, 1h).
func parseSeconds(v string) (time.Duration, error) {
	if f, err := strconv.ParseFloat(v, 64); err == nil {
		switch {
		case !(f >= 0): // also NaN
			return 0, fmt.Errorf("%s is not a time in seconds", v)
		case f > maxSeconds:
			return 0, fmt.Errorf("%s seconds is too long", v)
		}
		return time.Duration(f * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("%q is neither seconds nor a duration such as 500ms", v)
	}
	if d < 0 {
		return 0, fmt.Errorf("%s is negative", v)
	}
	return d, nil
}

// procsString shows a count whose 0 means auto (procs, gc_percent).
func procsString(n int) string {
	if n == 0 {
		return "auto"
	}
	return strconv.Itoa(n)
}

// AutoProcs is the daemon's GOMAXPROCS under procs=auto: every CPU, and
// one more.
//
// The daemon's goroutines spend most of their time blocked in system
// calls that hold their P: go-fuse's readers in read(2) of /dev/fuse, a
// ring's thread in io_uring_enter, the committer in fdatasync. A
// goroutine woken or started meanwhile (the reader go-fuse starts when
// the last one takes a request, an FSYNC's handler) finds no idle P and
// waits until the runtime takes one back (tens of microseconds). The
// extra P is there for it. On 2 CPUs it beat one P on /dev/fuse (the rule
// before), most with fsync after every file; against a P per CPU through
// io_uring it was level without fsync and ahead with it, but for 64 KiB
// appends (figures in docs/PERFORMANCE.md, "Daemon CPUs"). A P per queue
// is the least the rings need: with fewer, their threads wait for one and
// the rings gained nothing over /dev/fuse. Not measured above 2 CPUs.
func AutoProcs(cpus int) int {
	return max(1, cpus) + 1
}

// Check reports options that contradict each other, once every -o list
// and flag has been applied.
func (c Config) Check() error {
	if len(c.kernelListed) > 0 && !c.Remount {
		return fmt.Errorf("%q: only a remount takes the options the kernel lists for a mount: %w", c.kernelListed[0], ErrUnknownOption)
	}
	if c.NoOpen && c.FlushOnClose {
		return fmt.Errorf("flush_on_close=on needs no_open=off: without OPEN there is no FLUSH at close: %w", ErrBadValue)
	}
	return nil
}

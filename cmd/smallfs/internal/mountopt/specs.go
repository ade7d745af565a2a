package mountopt

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	sfuse "github.com/smallfs/smallfs/fs/fuse"
)

// Spec describes one option smallfs itself understands. The command builds
// its --help text and the flags of `smallfs mount` from Specs, so the two
// forms cannot drift apart.
type Spec struct {
	Name    string // as written after -o; the flag is --name with '-' for '_'
	Value   string // placeholder for the value; empty for a switch
	Default string // as shown in help
	Help    string
	apply   func(c *Config, v string) error
}

// Flag is the spelling of the option as a long flag of `smallfs mount`.
func (s Spec) Flag() string { return strings.ReplaceAll(s.Name, "_", "-") }

// Specs lists smallfs's own options in the order help shows them.
func Specs() []Spec { return specs }

func specByName(name string) (Spec, bool) {
	for _, s := range specs {
		if s.Name == name {
			return s, true
		}
	}
	return Spec{}, false
}

var specs = []Spec{
	{Name: "commit_interval", Value: "DURATION", Default: "5s",
		Help: "commit at least this often: the most a crash loses of work not fsynced",
		apply: func(c *Config, v string) error {
			d, err := parseSeconds(v)
			if err == nil && d == 0 {
				err = fmt.Errorf("must be positive")
			}
			c.CommitInterval = d
			return err
		}},
	{Name: "entry_timeout", Value: "SECONDS", Default: "1h",
		Help:  "how long the kernel caches names",
		apply: durationField(func(c *Config) *time.Duration { return &c.EntryTimeout })},
	{Name: "attr_timeout", Value: "SECONDS", Default: "1h",
		Help:  "how long the kernel caches attributes",
		apply: durationField(func(c *Config) *time.Duration { return &c.AttrTimeout })},
	{Name: "negative_timeout", Value: "SECONDS", Default: "1h",
		Help:  "how long the kernel caches absent names",
		apply: durationField(func(c *Config) *time.Duration { return &c.NegativeTimeout })},
	{Name: "no_open", Value: "on|off", Default: "off",
		Help:  "open and close files without a kernel round trip; write-back errors then reach fsync, not close",
		apply: switchField(func(c *Config) *bool { return &c.NoOpen })},
	{Name: "uring", Value: "auto|on|off", Default: "auto",
		Help: "take requests through io_uring, one system call each, where the kernel offers it (Linux 6.14+ with /sys/module/fuse/parameters/enable_uring Y); on: fail where it does not",
		apply: func(c *Config, v string) error {
			switch v {
			case "auto":
				c.Uring = sfuse.UringAuto
			case "on":
				c.Uring = sfuse.UringOn
			case "off":
				c.Uring = sfuse.UringOff
			default:
				return fmt.Errorf("want auto, on or off")
			}
			return nil
		}},
	{Name: "flush_on_close", Value: "on|off", Default: "off",
		Help:  "write data back at every close(2), so close reports write-back errors (off: fsync reports them, as on ext4)",
		apply: switchField(func(c *Config) *bool { return &c.FlushOnClose })},
	{Name: "procs", Value: "N|auto", Default: "auto",
		Help:  "CPUs that run the daemon's code at once (GOMAXPROCS)",
		apply: autoCountField(func(c *Config) *int { return &c.Procs }, 1, 1024)},
	{Name: "gc_percent", Value: "PERCENT|auto", Default: "auto",
		Help:  "heap growth, in % of the live heap, that starts a garbage collection (GOGC); auto is 100, or GOGC from the environment, and without GOGC a heap over 32 MiB grows by at most 32 MiB or an eighth of it",
		apply: autoCountField(func(c *Config) *int { return &c.GCPercent }, 10, 1000)},
	{Name: "iobuf_pool", Value: "on|off", Default: "on",
		Help:  "pool the buffers of written data (off: allocate each, to measure the pools)",
		apply: switchField(func(c *Config) *bool { return &c.IobufPool })},
	{Name: "readahead", Value: "SIZE|off", Default: "2M",
		Help: "largest window the daemon asks the device to read ahead of a reader walking a directory's files in device order (K, M suffixes; off or 0: none)",
		apply: func(c *Config, v string) error {
			n, err := parseWindow(v)
			c.Readahead = n
			return err
		}},
	{Name: "zero_ahead", Value: "on|off", Default: "on",
		Help:  "write zeros over a region of an image file's fallocated blocks before the first fsync-ed write into it, so fsyncs do not pay the host's conversion one block at a time",
		apply: switchField(func(c *Config) *bool { return &c.ZeroAhead })},
	{Name: "allow_other", Help: "let other users reach the files (the kernel checks their permissions)",
		apply: func(c *Config, _ string) error { c.AllowOther = true; return nil }},
	{Name: "default_permissions", Help: "the kernel checks mode bits also where only root can reach the mount (by default such a mount leaves root's checks to smallfs)",
		apply: func(c *Config, _ string) error { c.Permissions = sfuse.PermissionsKernel; return nil }},
	{Name: "fsname", Value: "NAME", Default: "the device",
		Help:  "source shown by mount and df",
		apply: func(c *Config, v string) error { c.FsName = v; return nil }},
	{Name: "subtype", Value: "TYPE", Help: "accepted and ignored: the type is always fuse.smallfs",
		apply: func(_ *Config, _ string) error { return nil }},
	{Name: "log_level", Value: "LEVEL", Default: "info",
		Help: "trace, debug, info, warning, error",
		apply: func(c *Config, v string) error {
			l, err := logrus.ParseLevel(v)
			if err != nil || l < logrus.ErrorLevel {
				return fmt.Errorf("want one of trace, debug, info, warning, error")
			}
			c.LogLevel = l
			return nil
		}},
	{Name: "log_format", Value: "FORMAT", Default: "text",
		Help: "text or json",
		apply: func(c *Config, v string) error {
			if v != "text" && v != "json" {
				return fmt.Errorf("want text or json")
			}
			c.LogFormat = v
			return nil
		}},
	{Name: "log_file", Value: "PATH",
		Help: "log file of the background daemon, or syslog",
		apply: func(c *Config, v string) error {
			if v == "" {
				return fmt.Errorf("empty path")
			}
			c.LogFile = v
			return nil
		}},
	{Name: "debug", Help: "log every FUSE request; implies log_level=debug",
		apply: func(c *Config, _ string) error {
			c.Debug = true
			c.LogLevel = max(c.LogLevel, logrus.DebugLevel)
			return nil
		}},
	{Name: "metrics_addr", Value: "HOST:PORT", Default: "off",
		Help: "serve Prometheus metrics on this loopback address",
		apply: func(c *Config, v string) error {
			if err := checkLoopback(v); err != nil {
				return err
			}
			c.MetricsAddr = v
			return nil
		}},
}

// maxReadahead bounds readahead=: more than a host's own largest
// readahead window buys nothing but cache pollution.
const maxReadahead = 64 << 20

// parseWindow reads readahead=: bytes with an optional K or M suffix, or
// off (0): -1 for off.
func parseWindow(v string) (int64, error) {
	if v == "off" || v == "0" {
		return -1, nil
	}
	t, shift := strings.ToUpper(v), 0
	if n := len(t); n > 0 {
		if i := strings.IndexByte("KM", t[n-1]); i >= 0 {
			shift, t = 10*(i+1), t[:n-1]
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 0 || n > maxReadahead>>shift || n<<shift < 4096 {
		return 0, fmt.Errorf("want off, or a size from 4K to 64M such as 512K or 2M")
	}
	return n << shift, nil
}

func durationField(field func(*Config) *time.Duration) func(_ *Config, _ string) error {
	return func(c *Config, v string) error {
		d, err := parseSeconds(v)
		*field(c) = d
		return err
	}
}

// autoCountField sets a count from lo to hi, or 0 for "auto".
func autoCountField(field func(*Config) *int, lo, hi int) func(_ *Config, _ string) error {
	return func(c *Config, v string) error {
		if v == "auto" {
			*field(c) = 0
			return nil
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < lo || n > hi {
			return fmt.Errorf("want auto or a number from %d to %d", lo, hi)
		}
		*field(c) = n
		return nil
	}
}

func switchField(field func(*Config) *bool) func(_ *Config, _ string) error {
	return func(c *Config, v string) error {
		switch v {
		case "on":
			*field(c) = true
		case "off":
			*field(c) = false
		default:
			return fmt.Errorf("want on or off")
		}
		return nil
	}
}

// checkLoopback refuses metrics addresses other machines could reach: the
// figures are unauthenticated.
func checkLoopback(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || port == "" {
		return fmt.Errorf("want HOST:PORT, such as 127.0.0.1:9567")
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("%s is not a loopback address", host)
	}
	return nil
}

package mountopt

import (
	"fmt"
	"strings"
)

// Args is a parsed command line of the form mount.fuse3 uses to call a
// filesystem's helper:
//
//	smallfs [-f] [-d] [-s] [-o OPTS]... DEVICE MOUNTPOINT [-o OPTS]...
//
// Options may come before or after the positional arguments and -o may be
// repeated; later options override earlier ones.
type Args struct {
	Device     string
	Mountpoint string
	Foreground bool // -f: stay in the foreground, log to stderr
	Help       bool // -h, --help: nothing else is checked
	Version    bool // -V, --version
	Config     Config
}

// TypeName is the filesystem type smallfs mounts as (fuse.TypeName).
const TypeName = "smallfs"

// ParseArgs reads a helper-form command line (without the program name).
// The source may carry the old "smallfs#" type prefix. It reports every
// bad option at once; usage errors wrap ErrUsage.
func ParseArgs(args []string) (Args, error) {
	a := Args{Config: Defaults()}
	var pos []string
	var errs []error
	optionList := func(list string) {
		if err := a.Config.Apply(list); err != nil {
			errs = append(errs, err)
		}
	}
	for i := 0; i < len(args); i++ {
		arg := args[i]
		switch {
		case arg == "--":
			pos = append(pos, args[i+1:]...)
			i = len(args)
		case arg == "-h" || arg == "--help":
			return Args{Help: true}, nil
		case arg == "-V" || arg == "--version":
			return Args{Version: true}, nil
		case arg == "-o" || arg == "-t":
			if i+1 == len(args) {
				return Args{}, usagef("%s needs an argument", arg)
			}
			i++
			if arg == "-o" {
				optionList(args[i])
			} else if err := checkType(args[i]); err != nil {
				return Args{}, err
			}
		case strings.HasPrefix(arg, "-o"):
			optionList(arg[2:])
		case len(arg) > 1 && arg[0] == '-':
			if err := a.shortFlags(arg); err != nil {
				return Args{}, err
			}
		default:
			pos = append(pos, arg)
		}
	}
	if len(errs) > 0 {
		return Args{}, joinErrors(errs)
	}
	if len(pos) != 2 {
		return Args{}, usagef("want DEVICE and MOUNTPOINT, got %d argument(s)", len(pos))
	}
	a.Device = strings.TrimPrefix(pos[0], TypeName+"#")
	a.Mountpoint = pos[1]
	if a.Device == "" || a.Mountpoint == "" {
		return Args{}, usagef("empty DEVICE or MOUNTPOINT")
	}
	return a, nil
}

// shortFlags handles a cluster of one-letter switches such as -fd.
// -s (single-threaded, for libfuse filesystems) and -v, -n (passed by
// mount(8): verbose, no mtab) are accepted and have no effect.
func (a *Args) shortFlags(arg string) error {
	for _, r := range arg[1:] {
		switch r {
		case 'f':
			a.Foreground = true
		case 'd':
			if err := a.Config.Apply("debug"); err != nil {
				return err
			}
		case 's', 'v', 'n':
		default:
			return usagef("unknown flag -%c", r)
		}
	}
	return nil
}

// checkType accepts the -t values mount(8) and mount.fuse3 may pass.
func checkType(t string) error {
	switch t {
	case TypeName, "fuse." + TypeName, "fuse":
		return nil
	}
	return usagef("type %q is not fuse.%s", t, TypeName)
}

// usageError is a usage mistake: its text is the message alone, and it
// matches ErrUsage.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }
func (e *usageError) Unwrap() error { return ErrUsage }

func usagef(format string, args ...any) error {
	return &usageError{fmt.Sprintf(format, args...)}
}

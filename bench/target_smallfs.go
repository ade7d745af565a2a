package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/smallfs/smallfs/accounting"
)

// PoolOption is the mount option the bench passes to run smallfs with
// iobuf pooling off. The bench looks for it in `smallfs mount --help` and
// reports the pools' gain as n/a until the command offers it.
const PoolOption = "iobuf_pool=off"

// poolOnOption is passed to the "smallfs" target when --pools runs both,
// so the comparison holds whatever the command's default, where the help
// lists "on" among the option's values.
const poolOnOption = "iobuf_pool=on"

// NoSumsFlag is the mkfs flag of the "smallfs-nosum" target (--checksums):
// an image that keeps no checksum of file data, whose reads are spliced
// from the device unverified. The bench looks for it in `smallfs mkfs
// --help` and skips the target until the command offers it.
const NoSumsFlag = "--no-data-checksums"

// smallfsTarget drives the real command: mkfs an image, mount it (the
// daemon goes to the background), read its figures with `smallfs stats
// --json`, unmount, and fsck.
type smallfsTarget struct {
	name string
	bin  string
	opts string // extra -o options
	mkfs []string
	s    *scratch
	img  string
	mnt  string
	pid  int
	// mounted is set once the mount command succeeded: only then is
	// there a daemon to wait for and an image to check.
	mounted bool
	// transport is how the last mount took its requests, as its stats
	// said ("io_uring", "/dev/fuse"); empty until a mount has answered.
	transport string
}

// newSmallfs is the target name mounting with -o opts images that mkfs
// makes with the flags given after the defaults.
func newSmallfs(name, bin, opts string, s *scratch, mkfs ...string) *smallfsTarget {
	return &smallfsTarget{name: name, bin: bin, opts: opts, s: s, mkfs: mkfs}
}

func (t *smallfsTarget) Name() string { return t.name }
func (t *smallfsTarget) Detail() string {
	d := "smallfs on an image file (" + t.bin + "; preallocate=" + t.s.prealloc.String() + ")"
	if len(t.mkfs) > 0 {
		d += ", mkfs " + strings.Join(t.mkfs, " ")
	}
	if t.opts != "" {
		d += ", -o " + t.opts
	}
	if t.transport != "" {
		d += ", requests through " + t.transport
	}
	return d
}

func (t *smallfsTarget) Mount(ctx context.Context, space int64) (string, error) {
	// A variant's name ("smallfs:procs=1,...") would put commas into the
	// log_file option below.
	t.img = t.s.path(pathSafe(t.name), ".img")
	t.mnt = strings.TrimSuffix(t.img, ".img")
	args := append([]string{"mkfs", "--size", strconv.FormatInt(space, 10), "--preallocate", t.s.prealloc.String()}, t.mkfs...)
	if _, err := command(ctx, 5*time.Minute, t.bin, append(args, t.img)...); err != nil {
		return "", fmt.Errorf("%w: %w", ErrTarget, err)
	}
	if err := mkdirFresh(t.mnt); err != nil {
		return "", err
	}
	opts := "log_file=" + t.mnt + ".log"
	if t.opts != "" {
		opts += "," + t.opts
	}
	if _, err := command(ctx, time.Minute, t.bin, t.img, t.mnt, "-o", opts); err != nil {
		return "", fmt.Errorf("%w: %w", ErrTarget, err)
	}
	t.mounted = true
	if st, err := t.stats(); err == nil {
		t.pid = st.Pid
		if st.Transport != nil {
			t.transport = st.Transport.Kind
		}
	}
	return t.mnt, nil
}

// daemonStats is the part of `smallfs stats --json` the bench reads.
type daemonStats struct {
	Pid        int                 `json:"pid"`
	Accounting accounting.Snapshot `json:"accounting"`
	Transport  *struct {
		Kind string `json:"kind"`
	} `json:"transport"`
	Runtime *struct {
		GCs uint32 `json:"gcs"`
	} `json:"runtime"`
}

func (t *smallfsTarget) stats() (daemonStats, error) {
	var st daemonStats
	out, err := command(context.Background(), 30*time.Second, t.bin, "stats", "--json", t.mnt)
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		return st, fmt.Errorf("smallfs stats --json: %w", err)
	}
	return st, nil
}

// Sample reads the daemon's FUSE request counters (layer "fuse", counters
// "op-OPCODE") and its CPU and memory from /proc. Reading them sends no
// request to the mount: stats reaches the daemon over its control socket.
func (t *smallfsTarget) Sample() Sample {
	s := Sample{Pid: t.pid, Detached: true}
	st, err := t.stats()
	if err != nil {
		s.Err = err
		readProc(&s)
		return s
	}
	if st.Pid > 0 {
		s.Pid, t.pid = st.Pid, st.Pid
	}
	if st.Runtime != nil {
		s.GCs, s.HasGCs = st.Runtime.GCs, true
	}
	if layer, ok := st.Accounting.Layer("fuse"); ok {
		s.Requests = map[string]uint64{}
		for _, c := range layer.Counters {
			if op, ok := strings.CutPrefix(c.Name, "op-"); ok {
				s.Requests[op] = c.Value
			}
		}
	}
	readProc(&s)
	return s
}

// Unmount unmounts, waits for the daemon to write its checkpoint and
// exit, and runs fsck. An image fsck does not call clean is kept beside
// the scratch directory, with the daemon's log, and the run fails.
func (t *smallfsTarget) Unmount() error {
	if t.mnt == "" {
		return nil
	}
	defer func() { t.img, t.mnt, t.pid, t.mounted = "", "", 0, false }()
	if !t.mounted {
		return removeFiles(t.mnt, t.img, t.mnt+".log")
	}
	err := unmount(t.mnt)
	if t.pid > 0 && !waitGone(t.pid, 2*time.Minute) {
		err = errors.Join(err, fmt.Errorf("%w: daemon %d still running 2 minutes after unmount", ErrTarget, t.pid))
	}
	if err != nil {
		return err
	}
	out, ferr := command(context.Background(), 10*time.Minute, t.bin, "fsck", t.img)
	if ferr != nil {
		kept := filepath.Join(filepath.Dir(t.s.dir), fmt.Sprintf("smallfs-bench-%s-%s.img", t.name, time.Now().Format("20060102-150405")))
		if rerr := os.Rename(t.img, kept); rerr != nil {
			kept = t.img + " (could not keep it: " + rerr.Error() + ")"
		}
		_ = os.Rename(t.mnt+".log", strings.TrimSuffix(kept, ".img")+".log")
		return fmt.Errorf("%w: %s: %s; image kept at %s", ErrCorrupt, t.name, strings.Join(strings.Fields(out), " "), kept)
	}
	return removeFiles(t.mnt, t.img, t.mnt+".log")
}

// smallfsBinary returns the smallfs command to drive: this executable when
// it is smallfs, else one built from the module source in the current
// directory into the scratch directory.
func smallfsBinary(ctx context.Context, s *scratch) (string, error) {
	if self, err := os.Executable(); err == nil && filepath.Base(self) == "smallfs" {
		return self, nil
	}
	bin := filepath.Join(s.dir, "smallfs")
	if _, err := command(ctx, 10*time.Minute, "go", "build", "-o", bin, "github.com/smallfs/smallfs/cmd/smallfs"); err != nil {
		return "", fmt.Errorf("%w: building smallfs (run inside the source tree, or pass --smallfs-bin): %w", ErrTarget, err)
	}
	return bin, nil
}

// poolOptions reads bin's mount options (`smallfs mount --help` lists
// them one a line, "  name=VALUE  help") and tells whether it offers
// PoolOption, and whether its values include "on" (as "on|off").
func poolOptions(ctx context.Context, bin string) (offered, on bool) {
	out, _ := command(ctx, 30*time.Second, bin, "mount", "--help")
	name, _, _ := strings.Cut(PoolOption, "=")
	spec, offered := helpOptions(out)[name]
	return offered, slices.Contains(strings.Split(spec, "|"), "on")
}

// mkfsOffers tells whether bin's `mkfs --help` lists flag.
func mkfsOffers(ctx context.Context, bin, flag string) bool {
	out, _ := command(ctx, 30*time.Second, bin, "mkfs", "--help")
	for _, line := range strings.Split(out, "\n") {
		if f, _, _ := strings.Cut(strings.TrimSpace(line), " "); f == flag {
			return true
		}
	}
	return false
}

// helpOptions reads the options a help text lists, name to value spec
// ("" for a flag): lines indented by exactly two spaces whose first word
// is name=VALUE, or a bare name followed by two spaces or the line's end
// (one space after it is prose: "  suid is given."). Wrapped description
// lines and "--flag" lines are not options.
func helpOptions(help string) map[string]string {
	opts := map[string]string{}
	for _, line := range strings.Split(help, "\n") {
		rest, ok := strings.CutPrefix(line, "  ")
		if !ok || rest == "" || rest[0] == ' ' || rest[0] == '-' {
			continue
		}
		word, after, _ := strings.Cut(rest, " ")
		name, value, hasValue := strings.Cut(word, "=")
		if !hasValue && after != "" && !strings.HasPrefix(after, " ") {
			continue
		}
		if name != "" && strings.Trim(name, "abcdefghijklmnopqrstuvwxyz0123456789_") == "" {
			opts[name] = value
		}
	}
	return opts
}

// pathSafe maps a target name to a file name of letters, digits, '-' and
// '_' only.
func pathSafe(name string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			return r
		}
		return '_'
	}, name)
}

package mountinfo

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// ErrNotMounted is returned by Find when nothing is mounted on the path.
var ErrNotMounted = errors.New("not a mount point")

// Mount is one line of mountinfo.
type Mount struct {
	Dev        string // "major:minor", the st_dev of the mounted filesystem
	Mountpoint string
	Type       string // "fuse.smallfs", "ext4", ...
	Source     string
	Options    string // per-mount options (ro, nodev, ...)
	// SuperOptions are the filesystem's (ro, sync, user_id=0, ...).
	SuperOptions string
}

// Path is the table the running kernel keeps for this process.
const Path = "/proc/self/mountinfo"

// Find returns the mount on the absolute, clean path dir; when mounts are
// stacked there it returns the topmost (the last one listed).
func Find(dir string) (Mount, error) {
	f, err := os.Open(Path)
	if err != nil {
		return Mount{}, err
	}
	defer f.Close()
	return find(f, dir)
}

func find(r io.Reader, dir string) (Mount, error) {
	all, err := parseAll(r)
	if err != nil {
		return Mount{}, err
	}
	for i := len(all) - 1; i >= 0; i-- {
		if all[i].Mountpoint == dir {
			return all[i], nil
		}
	}
	return Mount{}, fmt.Errorf("%s: %w", dir, ErrNotMounted)
}

// All returns every mount, in the kernel's order (a mount stacked on
// another comes after it).
func All() ([]Mount, error) {
	f, err := os.Open(Path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parseAll(f)
}

func parseAll(r io.Reader) ([]Mount, error) {
	var all []Mount
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		if m, ok := parse(sc.Text()); ok {
			all = append(all, m)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", Path, err)
	}
	return all, nil
}

func parse(line string) (Mount, bool) {
	left, right, ok := strings.Cut(line, " - ")
	f, g := strings.Fields(left), strings.Fields(right)
	if !ok || len(f) < 6 || len(g) < 2 {
		return Mount{}, false
	}
	var super string
	if len(g) > 2 {
		super = g[2]
	}
	return Mount{
		SuperOptions: super,
		Dev:          f[2],
		Mountpoint:   unescape(f[4]),
		Options:      f[5],
		Type:         g[0],
		Source:       unescape(g[1]),
	}, true
}

// unescape decodes the kernel's \ooo escapes.
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// command runs name with args, waiting at most timeout, and returns its
// combined output; a failure carries the output's last line.
func command(ctx context.Context, timeout time.Duration, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if err != nil {
		return out.String(), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, lastLine(out.String()))
	}
	return out.String(), nil
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// unmount unmounts dir, retrying while it is busy (a FUSE daemon may
// still be answering the last releases), then falls back to a lazy
// unmount (umount -l), which is reported as an error. Not mounted is
// success. Without root, a FUSE mount goes through fusermount3.
func unmount(dir string) error {
	var err error
	for range 50 {
		err = syscall.Unmount(dir, 0)
		if err == nil || errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOENT) {
			return nil
		}
		if !errors.Is(err, syscall.EBUSY) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if errors.Is(err, syscall.EPERM) {
		if _, ferr := command(context.Background(), time.Minute, "fusermount3", "-u", dir); ferr == nil {
			return nil
		}
	}
	if lerr := syscall.Unmount(dir, syscall.MNT_DETACH); lerr == nil {
		return fmt.Errorf("%w: umount %s: %w; detached it (umount -l)", ErrTarget, dir, err)
	}
	return fmt.Errorf("%w: umount %s: %w", ErrTarget, dir, err)
}

// mkdirFresh makes dir, which must not exist.
func mkdirFresh(dir string) error {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return fmt.Errorf("%w: %w", ErrTarget, err)
	}
	return nil
}

// removeFiles removes the files or empty directories that exist of paths.
func removeFiles(paths ...string) error {
	var errs []error
	for _, p := range paths {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// mountsUnder lists the mount points at or below dir, from
// /proc/self/mountinfo (field 5), deepest last.
func mountsUnder(dir string) []string {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		mp := unescapeMount(f[4])
		if mp == dir || strings.HasPrefix(mp, dir+"/") {
			out = append(out, mp)
		}
	}
	return out
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var v byte
			ok := true
			for _, c := range s[i+1 : i+4] {
				if c < '0' || c > '7' {
					ok = false
					break
				}
				v = v*8 + byte(c-'0')
			}
			if ok {
				b.WriteByte(v)
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

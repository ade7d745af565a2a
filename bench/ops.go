package bench

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// Op is one step of the sequence. Steps run in Sequence order on one
// tree: each leaves what the next one needs.
type Op struct {
	Name string
	// Data is set for steps that move file contents; they report MB/s.
	Data bool
	// Xattr is set for steps that need extended attributes.
	Xattr bool
	// Cold is set for steps that start from cold caches: Do drops the
	// kernel's caches (dropCaches) before the step's clock starts.
	Cold bool
	run  func(t *thread) error
}

// Sequence is the whole run, in order:
//
//	create          open O_CREAT|O_EXCL, write Size bytes, [fsync,] close
//	read            open, read Size bytes, check them, close
//	cold-read       the same after the kernel's caches are dropped
//	append          open O_APPEND, write Size bytes, [fsync,] close
//	stat            lstat, check size and type
//	stat-again      the same: attributes the kernel already holds
//	chmod           chmod 0640
//	ls-l            per directory: list names, lstat each, check count and mode
//	setxattr        set user.smallfs-bench (XattrSize bytes)
//	getxattr        get it back and check it
//	rename          move each file to the same name in a sibling directory
//	delete-renamed  unlink the renamed files
//	mkdir           make one empty directory per file index
//	rmdir           remove them
//	swift-put       write a temporary name, fsync, close, rename into place
//	cleanup         unlink every file, remove the directory tree
//
// Every step counts one file per file index, so files/s compare across
// steps; ls-l counts the entries it stats.
func Sequence() []Op {
	file := func(name string, f fileFunc) Op {
		return Op{Name: name, run: func(t *thread) error { return t.each(name, f) }}
	}
	data := func(op Op) Op { op.Data = true; return op }
	xattr := func(op Op) Op { op.Xattr = true; return op }
	cold := func(op Op) Op { op.Cold = true; return op }
	return []Op{
		data(file("create", (*thread).create)),
		data(file("read", (*thread).read)),
		cold(data(file("cold-read", (*thread).read))),
		data(file("append", (*thread).appendOp)),
		file("stat", (*thread).stat),
		file("stat-again", (*thread).stat),
		file("chmod", (*thread).chmod),
		{Name: "ls-l", run: (*thread).lsl},
		xattr(file("setxattr", (*thread).setxattr)),
		xattr(file("getxattr", (*thread).getxattr)),
		file("rename", (*thread).rename),
		file("delete-renamed", (*thread).deleteRenamed),
		file("mkdir", (*thread).mkdir),
		file("rmdir", (*thread).rmdir),
		data(file("swift-put", (*thread).swiftPut)),
		{Name: "cleanup", run: (*thread).cleanup},
	}
}

// fileFunc does one step to file index i and returns the bytes it moved.
type fileFunc func(t *thread, i int) (int64, error)

// OpNames lists the names of Sequence in order.
func OpNames() []string {
	var names []string
	for _, op := range Sequence() {
		names = append(names, op.Name)
	}
	return names
}

const (
	xattrName   = "user.smallfs-bench"
	createFlags = syscall.O_WRONLY | syscall.O_CREAT | syscall.O_EXCL | syscall.O_CLOEXEC
	fileMode    = 0o644
	chmodMode   = 0o640
)

func (t *thread) create(i int) (int64, error) {
	return t.writeFile(t.l.files[i], createFlags, i, t.w.Fsync)
}

func (t *thread) appendOp(i int) (int64, error) {
	return t.writeFile(t.l.files[i], syscall.O_WRONLY|syscall.O_APPEND|syscall.O_CLOEXEC, i, t.w.Fsync)
}

func (t *thread) read(i int) (int64, error) {
	path := t.l.files[i]
	fd, err := again(func() (int, error) { return syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0) })
	if err != nil {
		return 0, err
	}
	n, err := readFull(fd, t.rbuf)
	if cerr := syscall.Close(fd); err == nil {
		err = cerr
	}
	if err != nil {
		return int64(n), err
	}
	if !t.w.NoVerify {
		if n != len(t.rbuf) {
			return int64(n), fmt.Errorf("%w: read %d bytes, wrote %d", ErrVerify, n, len(t.rbuf))
		}
		if !bytes.Equal(t.rbuf, t.pattern(i)) {
			return int64(n), fmt.Errorf("%w: the bytes read differ from those written", ErrVerify)
		}
	}
	return int64(n), nil
}

func (t *thread) stat(i int) (int64, error) {
	var st syscall.Stat_t
	if err := again0(func() error { return syscall.Lstat(t.l.files[i], &st) }); err != nil {
		return 0, err
	}
	if want := 2 * t.w.Size; st.Mode&syscall.S_IFMT != syscall.S_IFREG || st.Size != want {
		return 0, fmt.Errorf("%w: mode %o size %d, want a regular file of %d bytes", ErrVerify, st.Mode, st.Size, want)
	}
	return 0, nil
}

func (t *thread) chmod(i int) (int64, error) {
	return 0, again0(func() error { return syscall.Chmod(t.l.files[i], chmodMode) })
}

func (t *thread) setxattr(i int) (int64, error) {
	err := again0(func() error { return syscall.Setxattr(t.l.files[i], xattrName, t.xval, 0) })
	if errors.Is(err, syscall.ENOTSUP) {
		return 0, fmt.Errorf("%w: %w", ErrUnsupported, err)
	}
	return 0, err
}

func (t *thread) getxattr(i int) (int64, error) {
	n, err := again(func() (int, error) { return syscall.Getxattr(t.l.files[i], xattrName, t.xbuf) })
	if err != nil {
		return 0, err
	}
	if !bytes.Equal(t.xbuf[:n], t.xval) {
		return 0, fmt.Errorf("%w: xattr value of %d bytes differs from the %d set", ErrVerify, n, len(t.xval))
	}
	return 0, nil
}

func (t *thread) rename(i int) (int64, error) {
	return 0, again0(func() error { return syscall.Rename(t.l.files[i], t.l.renamed[i]) })
}

func (t *thread) deleteRenamed(i int) (int64, error) {
	return 0, again0(func() error { return syscall.Unlink(t.l.renamed[i]) })
}

func (t *thread) mkdir(i int) (int64, error) {
	return 0, again0(func() error { return syscall.Mkdir(t.l.subdirs[i], 0o755) })
}

func (t *thread) rmdir(i int) (int64, error) {
	return 0, again0(func() error { return syscall.Rmdir(t.l.subdirs[i]) })
}

func (t *thread) swiftPut(i int) (int64, error) {
	n, err := t.writeFile(t.l.temps[i], createFlags, i, true)
	if err != nil {
		return n, err
	}
	return n, again0(func() error { return syscall.Rename(t.l.temps[i], t.l.files[i]) })
}

func (t *thread) cleanupFile(i int) (int64, error) {
	return 0, again0(func() error { return syscall.Unlink(t.l.files[i]) })
}

// lsl lists each source directory and stats every entry, as ls -l does.
func (t *thread) lsl() error {
	var seen int
	for _, dir := range t.l.srcDirs {
		if err := t.stopped(); err != nil {
			return err
		}
		names, err := readNames(dir)
		if err != nil {
			return fmt.Errorf("ls-l %s: %w", dir, err)
		}
		for _, name := range names {
			var st syscall.Stat_t
			path := dir + "/" + name
			if err := again0(func() error { return syscall.Lstat(path, &st) }); err != nil {
				return fmt.Errorf("ls-l %s: %w", path, err)
			}
			if st.Mode&0o7777 != chmodMode {
				return fmt.Errorf("ls-l %s: %w: mode %o after chmod %o", path, ErrVerify, st.Mode&0o7777, chmodMode)
			}
			t.count(0)
		}
		seen += len(names)
	}
	if seen != t.w.Files {
		return fmt.Errorf("ls-l %s: %w: listed %d files, created %d", t.l.top, ErrVerify, seen, t.w.Files)
	}
	return nil
}

// cleanup unlinks every file, then removes the thread's directories.
func (t *thread) cleanup() error {
	if err := t.each("cleanup", (*thread).cleanupFile); err != nil {
		return err
	}
	dirs := t.l.dirs()
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := again0(func() error { return syscall.Rmdir(dirs[i]) }); err != nil {
			return fmt.Errorf("cleanup %s: %w", dirs[i], err)
		}
	}
	return nil
}

// readNames lists a directory without sorting or stating.
func readNames(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(-1)
}

// prepareDirs makes the thread's directories (not timed).
func (l *layout) prepareDirs() error {
	for _, d := range l.dirs() {
		if err := os.Mkdir(d, 0o755); err != nil {
			return fmt.Errorf("%w: preparing %s: %w", ErrTarget, filepath.Base(d), err)
		}
	}
	return nil
}

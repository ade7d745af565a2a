package bench

import (
	"fmt"
	"strings"
)

// Workload is one smallfile-style sequence: Threads threads of Files files
// each, every file Size bytes, FilesPerDir files to a directory.
type Workload struct {
	Threads     int   // worker threads; default 2
	Files       int   // files per thread; default 5,000
	Size        int64 // bytes per file (create, append, swift-put); 0 makes empty files
	FilesPerDir int   // files in one directory; default 100
	Fsync       bool  // fsync every file before close in create and append (fs_mark-like)
	XattrSize   int   // bytes of the xattr value setxattr writes; default 64
	// NoVerify skips checking the bytes read back. Verification costs a
	// memory compare per file, invisible next to a system call.
	NoVerify bool
}

// Limits that keep a bad flag from exhausting memory: the engine keeps
// every path of the run in memory (about 250 bytes per file).
const (
	maxThreads     = 256
	maxTotalFiles  = 20_000_000
	maxSize        = 1 << 30
	maxXattrSize   = 4096
	maxFilesPerDir = 10_000_000
	recordSize     = 1 << 20 // largest single read or write, as smallfile's default
)

// withDefaults fills the zero fields that have a default.
func (w Workload) withDefaults() Workload {
	if w.Threads == 0 {
		w.Threads = 2
	}
	if w.Files == 0 {
		w.Files = 5000
	}
	if w.FilesPerDir == 0 {
		w.FilesPerDir = 100
	}
	if w.XattrSize == 0 {
		w.XattrSize = 64
	}
	return w
}

// validate reports every bad field at once, wrapping ErrUsage.
func (w Workload) validate() error {
	var errs []string
	bad := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	if w.Threads < 1 || w.Threads > maxThreads {
		bad("threads %d: want 1 to %d", w.Threads, maxThreads)
	}
	if w.Files < 1 || int64(w.Files)*int64(max(w.Threads, 1)) > maxTotalFiles {
		bad("files %d: want at least 1 and at most %d over all threads", w.Files, maxTotalFiles)
	}
	if w.Size < 0 || w.Size > maxSize {
		bad("size %d: want 0 to %d bytes", w.Size, maxSize)
	}
	if w.FilesPerDir < 1 || w.FilesPerDir > maxFilesPerDir {
		bad("files per directory %d: want 1 to %d", w.FilesPerDir, maxFilesPerDir)
	}
	if w.XattrSize < 1 || w.XattrSize > maxXattrSize {
		bad("xattr size %d: want 1 to %d bytes", w.XattrSize, maxXattrSize)
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %s", ErrUsage, strings.Join(errs, "; "))
	}
	return nil
}

// TotalFiles is the number of files one operation handles over all threads.
func (w Workload) TotalFiles() int64 { return int64(w.Threads) * int64(w.Files) }

// dirsPerThread is how many directories hold one thread's files.
func (w Workload) dirsPerThread() int { return (w.Files + w.FilesPerDir - 1) / w.FilesPerDir }

// SpaceNeeded is a generous bound on the bytes a filesystem needs for the
// run: after append every file holds 2×Size, and space freed by
// delete-renamed may not be reusable yet when swift-put writes again.
func (w Workload) SpaceNeeded() int64 {
	perFile := 4 * ((max(w.Size, 1) + 4095) &^ 4095)
	return w.TotalFiles()*(perFile+4096) + 256<<20
}

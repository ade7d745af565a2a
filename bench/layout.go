package bench

import (
	"fmt"
	"path/filepath"
)

// layout holds every path one thread touches, built before the clock
// starts so the timed loops only make system calls.
//
//	ROOT/tTT/            the thread's directory
//	ROOT/tTT/dDDDD/      source directories, FilesPerDir files each
//	ROOT/tTT/rDDDD/      rename destinations, same shape
//	.../dDDDD/fNNNNNNN   a file; fNNNNNNN.d its mkdir directory;
//	                     .fNNNNNNN.tmp its swift-put temporary
type layout struct {
	top     string
	srcDirs []string
	dstDirs []string
	files   []string // by file index
	renamed []string
	subdirs []string
	temps   []string
}

func newLayout(root string, thread int, w Workload) *layout {
	l := &layout{top: filepath.Join(root, fmt.Sprintf("t%02d", thread))}
	for d := range w.dirsPerThread() {
		l.srcDirs = append(l.srcDirs, filepath.Join(l.top, fmt.Sprintf("d%04d", d)))
		l.dstDirs = append(l.dstDirs, filepath.Join(l.top, fmt.Sprintf("r%04d", d)))
	}
	n := w.Files
	l.files = make([]string, n)
	l.renamed = make([]string, n)
	l.subdirs = make([]string, n)
	l.temps = make([]string, n)
	for i := range n {
		d := i / w.FilesPerDir
		name := fmt.Sprintf("f%07d", i)
		l.files[i] = filepath.Join(l.srcDirs[d], name)
		l.renamed[i] = filepath.Join(l.dstDirs[d], name)
		l.subdirs[i] = l.files[i] + ".d"
		l.temps[i] = filepath.Join(l.srcDirs[d], "."+name+".tmp")
	}
	return l
}

// dirs lists the directories in creation order (parents first).
func (l *layout) dirs() []string {
	out := append([]string{l.top}, l.srcDirs...)
	return append(out, l.dstDirs...)
}

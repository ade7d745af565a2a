package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/smallfs/smallfs/accounting"
	"github.com/smallfs/smallfs/cmd/smallfs/internal/control"
	"github.com/smallfs/smallfs/fs/fuse"
)

// snapshot gathers the daemon's figures; it runs for every stats request
// and statedump, concurrently with the filesystem.
func (m *mounted) snapshot() control.Stats {
	acct := accounting.Default.Snapshot()
	st := control.Stats{
		Version:    versionString(),
		Pid:        os.Getpid(),
		Device:     m.p.Device,
		Mountpoint: m.p.Mountpoint,
		Options:    m.p.Config.String(),
		ReadOnly:   m.p.Config.ReadOnly,
		Started:    m.started,
		Taken:      time.Now(),
		Ops:        opsFrom(acct),
		Accounting: acct,
		Runtime:    runtimeStats(),
	}
	m.sess.Stats(&st)
	return st
}

// opsFrom reads the FUSE adapter's per-opcode counters ("op-NAME",
// "err-NAME" and "absent-NAME" in its accounting layer); opcodes never
// seen are left out.
func opsFrom(s accounting.Snapshot) []control.Op {
	l, ok := s.Layer(fuse.Layer)
	if !ok {
		return nil
	}
	var ops []control.Op
	for _, c := range l.Counters {
		name, ok := strings.CutPrefix(c.Name, "op-")
		if !ok || c.Value == 0 {
			continue
		}
		op := control.Op{Name: name, Count: c.Value}
		if e, ok := l.Counter("err-" + name); ok {
			op.Errors = e.Value
		}
		if a, ok := l.Counter("absent-" + name); ok {
			op.Absent = a.Value
		}
		ops = append(ops, op)
	}
	return ops
}

func runtimeStats() control.Runtime {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return control.Runtime{
		HeapBytes:  ms.HeapAlloc,
		SysBytes:   ms.Sys,
		GCs:        ms.NumGC,
		Goroutines: runtime.NumGoroutine(),
	}
}

// dump writes the statedump (SIGUSR1) next to the control socket.
func (m *mounted) dump() {
	path := filepath.Join(control.RunDir(), fmt.Sprintf("smallfs-%d.dump", os.Getpid()))
	err := writeDump(path, m.snapshot())
	if err != nil {
		m.log.WithError(err).Error("statedump failed")
		return
	}
	m.log.WithField("path", path).Info("statedump written")
}

// writeDump replaces path atomically, so a reader never sees half a dump.
func writeDump(path string, st control.Stats) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	if err := control.PrivateDir(filepath.Dir(path)); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".dump-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := control.WriteText(tmp, st, nil); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/smallfs/smallfs/cmd/smallfs/internal/control"
	"github.com/smallfs/smallfs/cmd/smallfs/internal/daemon"
	"github.com/smallfs/smallfs/cmd/smallfs/internal/mountopt"
)

// serve runs one mount until it is unmounted, in the foreground (-f) or
// as the background daemon. It returns the one-line error of a mount that
// failed, or of a close that left the device unclean.
func (a *app) serve(p mountopt.Args) error {
	// Signals are caught from the start: a SIGUSR1 or SIGTERM arriving
	// while the volume opens must not kill the process with the default
	// action; it waits in the channel until the mount is ready.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGUSR1, syscall.SIGHUP)
	defer signal.Stop(sigs)
	var err error
	if p, err = absolute(p); err != nil {
		return err
	}
	mlog, err := openLog(p.Config, a.notifier == nil, a.stderr)
	if err != nil {
		return err
	}
	defer mlog.close()
	if a.notifier != nil && mlog.file != nil {
		_ = daemon.RedirectStderr(mlog.file) // a panic lands in the log
	}
	log := mlog.WithFields(logrus.Fields{"device": p.Device, "mountpoint": p.Mountpoint, "pid": os.Getpid()})
	procs := p.Config.Procs
	if procs == 0 {
		procs = mountopt.AutoProcs(runtime.NumCPU())
	}
	runtime.GOMAXPROCS(procs)
	gc, bound := gcPercent(p.Config.GCPercent)
	log.WithFields(logrus.Fields{
		"version": versionString(), "options": p.Config.String(), "ignored": strings.Join(p.Config.Ignored, ","),
		"log": mlog.dest, "background": a.notifier != nil, "procs": procs, "gc_percent": gc,
	}).Info("mounting")

	sess, err := a.open(p, log)
	if err != nil {
		log.WithError(err).Error("mount failed")
		return err
	}
	if bound {
		boundHeap()
	}
	m := &mounted{p: p, sess: sess, log: log, mlog: mlog, started: time.Now(), background: a.notifier != nil}
	return m.run(sigs, a.notifier)
}

// open checks the mount point, then opens the device and volume and
// mounts them.
func (a *app) open(p mountopt.Args, log logrus.FieldLogger) (session, error) {
	if err := checkMountpoint(p.Mountpoint, p.Device, log); err != nil {
		return nil, err
	}
	progress, done := a.openProgress(log)
	defer done()
	return openSession(p, log, progress)
}

// absolute makes the paths absolute, so the log, /proc/mounts and df name
// them unambiguously, and defaults fsname to the device.
func absolute(p mountopt.Args) (mountopt.Args, error) {
	var err error
	if p.Device, err = filepath.Abs(p.Device); err != nil {
		return p, err
	}
	mnt, err := resolveMountpoint(p.Mountpoint)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return p, fmt.Errorf("%s: mount point does not exist (nor does the directory it would be in)", p.Mountpoint)
	case err != nil:
		return p, fmt.Errorf("%s: mount point: %w", p.Mountpoint, err)
	}
	p.Mountpoint = mnt
	if p.Config.FsName == "" {
		p.Config.FsName = p.Device
	}
	return p, nil
}

// checkMountpoint turns the common mistakes into one clear line. A
// smallfs already there is looked at first, from the mount table alone
// (clearDeadMount): a dead one fails every stat.
func checkMountpoint(dir, dev string, log logrus.FieldLogger) error {
	if err := clearDeadMount(dir, dev, log); err != nil {
		return err
	}
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("%s: mount point does not exist", dir)
	case err != nil:
		return fmt.Errorf("%s: mount point: %w", dir, err)
	case !fi.IsDir():
		return fmt.Errorf("%s: mount point is not a directory", dir)
	}
	return nil
}

// mounted is a running mount in the daemon.
type mounted struct {
	p       mountopt.Args
	sess    session
	log     logrus.FieldLogger
	mlog    *mountLog
	started time.Time
	dev     string // "major:minor" of the mount
	ctl     *control.Server
	metrics *control.MetricsServer
	// background is set in the daemon, whose stderr follows the log file.
	background bool
	// scrubbing holds the one scrub that may run at a time; scrubNext is
	// where the last one stopped (0: it finished, or none ran).
	scrubbing sync.Mutex
	scrubNext uint64
}

// run reports ready once the mount answers, then serves signals until the
// kernel unmounts the filesystem, and closes the volume.
func (m *mounted) run(sigs <-chan os.Signal, notifier *daemon.Notifier) error {
	var st syscall.Stat_t
	if err := syscall.Stat(m.p.Mountpoint, &st); err != nil {
		err = fmt.Errorf("%s: mounted but does not answer: %w", m.p.Mountpoint, err)
		m.log.WithError(err).Error("mount failed")
		m.stop("mount check failed")
		<-m.sess.Done()
		_ = m.sess.Close()
		return err
	}
	m.dev = control.DevName(st.Dev)
	sock := control.SocketPath(control.RunDir(), m.dev)
	if ctl, err := control.Serve(sock, m.handlers()); err != nil {
		m.log.WithError(err).Warn("no control socket: smallfs stats will not reach this mount")
	} else {
		m.ctl = ctl
	}
	if addr := m.p.Config.MetricsAddr; addr != "" {
		if ms, err := control.ServeMetrics(addr, m.snapshot); err != nil {
			m.log.WithError(err).Error("no metrics endpoint")
		} else {
			m.metrics = ms
			m.log.WithField("url", "http://"+ms.Addr()+"/metrics").Info("serving metrics")
		}
	}
	if err := notifier.Ready(); err != nil {
		m.log.WithError(err).Warn("could not tell the mount command we are ready")
	}
	m.log.WithFields(logrus.Fields{"dev": m.dev, "stats_socket": sock}).Info("ready")
	// Loading the metadata left garbage and the heap's peak resident:
	// collect it and hand the pages back once, off the mount's path.
	go debug.FreeOSMemory()

	for {
		select {
		case s := <-sigs:
			m.signal(s)
		case <-m.sess.Done():
			return m.finish()
		}
	}
}

func (m *mounted) signal(s os.Signal) {
	switch s {
	case syscall.SIGTERM, syscall.SIGINT:
		m.stop(s.String())
	case syscall.SIGUSR1:
		m.dump()
	case syscall.SIGHUP:
		if err := m.mlog.reopen(); err != nil {
			m.log.WithError(err).Error("reopening the log file")
		} else if m.mlog.file != nil && m.background {
			_ = daemon.RedirectStderr(m.mlog.file)
		}
		m.log.Info("log file reopened")
	}
}

// stop commits what was written, then unmounts. If files are still open
// the kernel refuses; the connection is then aborted: the mount goes
// away at once, the processes holding files get ENOTCONN from then on,
// and the daemon closes the volume with everything it had received (the
// open files are released into it). SIGTERM thus ends the daemon
// promptly, as a service manager expects. If aborting fails, the mount is
// left detached and the daemon finishes when the last file is closed.
func (m *mounted) stop(why string) {
	m.log.WithField("reason", why).Info("unmounting")
	if err := m.sess.Sync(); err != nil {
		m.log.WithError(err).Error("commit before unmount failed")
	}
	err := m.sess.Unmount()
	if err == nil {
		return
	}
	m.log.WithError(err).Warn("unmount refused, files are open: aborting the connection")
	if err := m.sess.Abort(); err != nil {
		m.log.WithError(err).Error("aborting failed; the daemon finishes when the last open file is closed")
	}
}

// finish closes the volume after the kernel let go of it.
func (m *mounted) finish() error {
	if m.ctl != nil {
		_ = m.ctl.Close()
	}
	if m.metrics != nil {
		_ = m.metrics.Close()
	}
	start := time.Now()
	if err := m.sess.Close(); err != nil {
		m.log.WithError(err).Error("closing the volume failed: the device is not marked clean; run smallfs fsck")
		return fmt.Errorf("%s: close: %w", m.p.Device, err)
	}
	m.log.WithField("close_took", time.Since(start).Round(time.Millisecond)).Info(closedLine(m.p.Config.ReadOnly))
	return nil
}

// gcPercent sets the daemon's garbage collection target from gc_percent
// and returns what applies: under auto (0), GOGC from the environment,
// else Go's 100 with the growth bounded for a large heap once the volume
// is loaded (bound: boundHeap).
func gcPercent(n int) (applies string, bound bool) {
	if n == 0 {
		return heapBounded()
	}
	debug.SetGCPercent(n)
	return strconv.Itoa(n), false
}

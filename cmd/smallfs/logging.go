package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/syslog"
	"os"
	"path/filepath"
	"strconv"

	"github.com/sirupsen/logrus"
	lsyslog "github.com/sirupsen/logrus/hooks/syslog"

	"github.com/smallfs/smallfs/cmd/smallfs/internal/control"
	"github.com/smallfs/smallfs/cmd/smallfs/internal/mountopt"
)

// EnvLogFile names the log file of a background daemon given no
// log_file= (tests give each daemon one in its own directory).
const EnvLogFile = "SMALLFS_LOG_FILE"

// defaultLogFile is where a background daemon logs without log_file=:
// $SMALLFS_LOG_FILE, else the system log directory for root, the user's
// state directory otherwise.
func defaultLogFile() string {
	if f := os.Getenv(EnvLogFile); f != "" {
		return f
	}
	if os.Geteuid() == 0 {
		return "/var/log/smallfs.log"
	}
	dir := os.Getenv("XDG_STATE_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			home = os.TempDir()
		}
		dir = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(dir, "smallfs", "smallfs.log")
}

// logDefault is defaultLogFile; tests point it elsewhere.
var logDefault = defaultLogFile

// mountLog is the logger of one mount and what closes its destination.
type mountLog struct {
	*logrus.Logger
	file *os.File // nil for stderr and syslog
	dest string   // "stderr", "syslog" or the file's path, for the log
	// fallback says why the default log file could not be used, when the
	// log went to fallbackLogFile instead.
	fallback string
}

// openLog sets up logging as the options ask: stderr in the foreground
// unless log_file is given; the log file (or syslog) in the background.
func openLog(cfg mountopt.Config, foreground bool, stderr io.Writer) (*mountLog, error) {
	l := logrus.New()
	l.SetLevel(cfg.LogLevel)
	if cfg.LogFormat == "json" {
		l.SetFormatter(&logrus.JSONFormatter{})
	} else {
		l.SetFormatter(&logrus.TextFormatter{FullTimestamp: true, DisableColors: true})
	}
	m := &mountLog{Logger: l}
	dest := cfg.LogFile
	switch {
	case dest == "" && foreground:
		l.SetOutput(stderr)
		m.dest = "stderr"
		return m, nil
	case dest == "syslog":
		hook, err := lsyslog.NewSyslogHook("", "", syslog.LOG_DAEMON|syslog.LOG_INFO, "smallfs")
		if err != nil {
			return nil, fmt.Errorf("log_file=syslog: %w", err)
		}
		l.AddHook(hook)
		l.SetOutput(io.Discard)
		m.dest = "syslog"
		return m, nil
	case dest == "":
		f, dest, why, err := openDefaultLog()
		if err != nil {
			return nil, err
		}
		l.SetOutput(f)
		m.file, m.dest, m.fallback = f, dest, why
		if why != "" {
			l.WithFields(logrus.Fields{"log": dest, "default_log": why}).Warn("the default log file cannot be made; logging in the user's private temporary directory")
		}
		return m, nil
	}
	f, err := openLogFile(dest)
	if err != nil {
		return nil, fmt.Errorf("log file: %w", err)
	}
	l.SetOutput(f)
	m.file, m.dest = f, dest
	return m, nil
}

// openLogFile opens a log file for appending, making its directory.
func openLogFile(path string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	return os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
}

// openDefaultLog opens the default log file, or where that cannot be made
// (a user whose home is /nonexistent, a read-only /var/log), the one in
// the user's private temporary directory (fallbackLogFile): a mount that
// was not asked for a log file must not fail for want of one. why says
// what was wrong with the default, for the log.
func openDefaultLog() (f *os.File, path, why string, err error) {
	path = logDefault()
	f, err = openLogFile(path)
	if err == nil {
		return f, path, "", nil
	}
	why = err.Error()
	fallback, ferr := fallbackLogFile()
	if ferr == nil {
		if f, ferr = openLogFile(fallback); ferr == nil {
			return f, fallback, why, nil
		}
	}
	return nil, "", "", fmt.Errorf("log file: %v; nor in the fallback: %v (give log_file=)", err, ferr)
}

// fallbackLogFile is TMPDIR/smallfs-UID/smallfs.log, in a directory made
// 0700. A directory already there must be private (control.PrivateDir):
// in a shared /tmp another user could have made it first, to read or
// replace the log.
func fallbackLogFile() (string, error) {
	dir := filepath.Join(os.TempDir(), "smallfs-"+strconv.Itoa(os.Geteuid()))
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", err
	}
	if err := control.PrivateDir(dir); err != nil {
		return "", err
	}
	return filepath.Join(dir, "smallfs.log"), nil
}

// reopen starts a new file after log rotation (SIGHUP); on failure the
// old file is kept.
func (m *mountLog) reopen() error {
	if m.file == nil {
		return nil
	}
	f, err := openLogFile(m.dest)
	if err != nil {
		return err
	}
	m.SetOutput(f)
	old := m.file
	m.file = f
	return old.Close()
}

// close closes the log file, if any.
func (m *mountLog) close() {
	if m.file != nil {
		m.file.Close()
	}
}

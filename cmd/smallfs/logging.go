package main

import (
	"fmt"
	"io"
	"log/syslog"
	"os"
	"path/filepath"

	"github.com/sirupsen/logrus"
	lsyslog "github.com/sirupsen/logrus/hooks/syslog"

	"github.com/smallfs/smallfs/cmd/smallfs/internal/mountopt"
)

// defaultLogFile is where a background daemon logs without log_file=:
// the system log directory for root, the user's state directory otherwise.
func defaultLogFile() string {
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

// mountLog is the logger of one mount and what closes its destination.
type mountLog struct {
	*logrus.Logger
	file *os.File // nil for stderr and syslog
	dest string   // "stderr", "syslog" or the file's path, for the log
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
		dest = defaultLogFile()
	}
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		return nil, fmt.Errorf("log file: %w", err)
	}
	f, err := os.OpenFile(dest, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
	if err != nil {
		return nil, fmt.Errorf("log file: %w", err)
	}
	l.SetOutput(f)
	m.file, m.dest = f, dest
	return m, nil
}

// reopen starts a new file after log rotation (SIGHUP); on failure the
// old file is kept.
func (m *mountLog) reopen() error {
	if m.file == nil {
		return nil
	}
	f, err := os.OpenFile(m.dest, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
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

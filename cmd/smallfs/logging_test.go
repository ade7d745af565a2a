package main

import (
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/smallfs/smallfs/cmd/smallfs/internal/mountopt"
)

// unusableDefaultLog points the default log file below a regular file,
// where no directory can be made, not even by root (as a user's home of
// /nonexistent), and TMPDIR at a fresh directory; it returns the
// fallback directory the log should land in.
func unusableDefaultLog(t *testing.T) string {
	t.Helper()
	tmp := t.TempDir()
	file := filepath.Join(tmp, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	old := logDefault
	logDefault = func() string { return filepath.Join(file, "state", "smallfs.log") }
	t.Cleanup(func() { logDefault = old })
	t.Setenv("TMPDIR", filepath.Join(tmp, "tmp"))
	if err := os.Mkdir(filepath.Join(tmp, "tmp"), 0o1777); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(tmp, "tmp", "smallfs-"+strconv.Itoa(os.Geteuid()))
}

// TestLogFallback: a background daemon whose default log file cannot be
// made logs in TMPDIR/smallfs-UID (made 0700) and says why.
func TestLogFallback(t *testing.T) {
	dir := unusableDefaultLog(t)
	m, err := openLog(mountopt.Defaults(), false, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	m.Info("hello")
	m.close()
	if m.dest != filepath.Join(dir, "smallfs.log") {
		t.Errorf("logged to %s, want %s/smallfs.log", m.dest, dir)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("fallback directory %v, %v; want mode 0700", fi.Mode(), err)
	}
	log := string(readFile(t, m.dest))
	if !strings.Contains(log, "the default log file cannot be made") || !strings.Contains(log, "not a directory") || !strings.Contains(log, "msg=hello") {
		t.Errorf("log:\n%s", log)
	}
	// The second mount reuses the directory.
	m, err = openLog(mountopt.Defaults(), false, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	m.close()

	// An explicit log_file has no fallback.
	cfg := mountopt.Defaults()
	cfg.LogFile = logDefault()
	if _, err := openLog(cfg, false, io.Discard); err == nil || !strings.Contains(err.Error(), "log file:") {
		t.Errorf("unusable log_file: %v, want an error", err)
	}
}

// TestLogFallbackRefusesSharedDir: a fallback directory that others may
// write in, or that another user owns, is refused, with the reason.
func TestLogFallbackRefusesSharedDir(t *testing.T) {
	dir := unusableDefaultLog(t)
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	_, err := openLog(mountopt.Defaults(), false, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "not a private directory: mode 0777 lets others write in it") {
		t.Errorf("world-writable fallback: %v", err)
	}
	if os.Geteuid() != 0 {
		t.Skip("giving the directory to another user needs root")
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	_, err = openLog(mountopt.Defaults(), false, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "not a private directory: owned by uid 65534, not 0") {
		t.Errorf("fallback owned by another user: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "smallfs.log")); err == nil {
		t.Error("a log file was made in a refused directory")
	}
}

// TestLogFileFromEnvironment: $SMALLFS_LOG_FILE is the default log file,
// for root as for anyone, so a daemon started by a test logs beside it.
func TestLogFileFromEnvironment(t *testing.T) {
	want := filepath.Join(t.TempDir(), "smallfs.log")
	t.Setenv(EnvLogFile, want)
	m, err := openLog(mountopt.Defaults(), false, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer m.close()
	if m.dest != want {
		t.Errorf("logged to %s, want %s", m.dest, want)
	}
	if _, err := os.Stat(want); err != nil {
		t.Error(err)
	}
}

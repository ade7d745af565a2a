package daemon

import (
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
)

// envTestMode makes the test binary act as a daemon (see TestMain).
const envTestMode = "DAEMON_TEST_MODE"

func TestMain(m *testing.M) {
	switch os.Getenv(envTestMode) {
	case "":
		os.Exit(m.Run())
	case "ready":
		n := Child()
		if syscall.Getpgrp() != os.Getpid() {
			n.Fail(errors.New("not a session leader"))
			os.Exit(1)
		}
		if _, set := os.LookupEnv(envReadyFD); set {
			n.Fail(errors.New("marker left in the environment"))
			os.Exit(1)
		}
		n.Ready()
		n.Fail(errors.New("second report must be ignored"))
		os.Exit(0)
	case "fail":
		Child().Fail(errors.New("device missing\nsecond line"))
		os.Exit(1)
	case "exit":
		os.Exit(3)
	}
}

func start(t *testing.T, mode string) (int, error) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return Start(exe, nil, []string{envTestMode + "=" + mode})
}

func TestStartReady(t *testing.T) {
	pid, err := start(t, "ready")
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	if pid <= 0 {
		t.Errorf("pid %d", pid)
	}
}

func TestStartFail(t *testing.T) {
	_, err := start(t, "fail")
	if err == nil || err.Error() != "device missing; second line" {
		t.Errorf("Start = %v, want the daemon's error on one line", err)
	}
}

func TestStartExited(t *testing.T) {
	_, err := start(t, "exit")
	if !errors.Is(err, ErrExited) || !strings.Contains(err.Error(), "exit status 3") {
		t.Errorf("Start = %v, want ErrExited with the status", err)
	}
}

func TestStartMissingExecutable(t *testing.T) {
	if _, err := Start("/nonexistent/smallfs", nil, nil); err == nil {
		t.Error("Start of a missing executable succeeded")
	}
}

func TestChildOutsideDaemon(t *testing.T) {
	if n := Child(); n != nil {
		t.Fatal("Child() in a process not started by Start")
	}
	var n *Notifier
	if err := n.Ready(); err != nil {
		t.Errorf("nil notifier: %v", err)
	}
}

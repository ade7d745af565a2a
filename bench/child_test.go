package bench

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A server that exits before mounting fails the mount with its log's last
// line; one that never mounts is stopped when the run is cancelled
// (Ctrl-C), without waiting out childTimeout.
func TestChildThatNeverMounts(t *testing.T) {
	mnt := t.TempDir() + "/mnt"
	_, err := startChild(context.Background(), "quitter", mnt, "", "sh", "-c", "echo no such image; exit 3")
	if !errors.Is(err, ErrTarget) || !strings.Contains(err.Error(), "no such image") || !strings.Contains(err.Error(), "exited before mounting") {
		t.Errorf("a server that quit: %v; want ErrTarget with its log's last line", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	t0 := time.Now()
	pidFile := mnt + ".pid"
	// Cancel once the server runs (has written its pid), however long a
	// loaded machine takes to start it.
	go func() {
		defer cancel()
		for time.Since(t0) < childTimeout {
			if b, err := os.ReadFile(pidFile); err == nil && strings.HasSuffix(string(b), "\n") {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	_, err = startChild(ctx, "sleeper", mnt, "", "sh", "-c", "echo $$ > "+pidFile+"; exec sleep 600")
	if !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled mount: %v; want context.Canceled", err)
	}
	if d := time.Since(t0); d >= childTimeout {
		t.Errorf("a cancelled mount took %v", d)
	}
	b, rerr := os.ReadFile(pidFile)
	if rerr != nil {
		t.Fatal(rerr)
	}
	if pid, _ := strconv.Atoi(strings.TrimSpace(string(b))); pid == 0 || alive(pid) {
		t.Errorf("the server (pid %q) is still running after a cancelled mount", b)
	}
}

// TestChildReadyLine: a child that says when it serves is not taken for
// ready while it is only mounted (go-fuse's server is still reading INIT
// and probing its mount then, and a teardown at that moment failed it).
// The child here mounts a tmpfs, logs its line a moment later, and exits
// once unmounted.
func TestChildReadyLine(t *testing.T) {
	needFUSEMount(t)
	for _, ready := range []string{"", "serving"} {
		mnt := t.TempDir() + "/mnt"
		if err := os.Mkdir(mnt, 0o755); err != nil {
			t.Fatal(err)
		}
		script := "mount -t tmpfs none $0 && sleep 0.3 && echo serving && while mountpoint -q $0; do sleep 0.02; done"
		c, err := startChild(context.Background(), "tmpfs "+ready, mnt, ready, "sh", "-c", script, mnt)
		if err != nil {
			t.Fatalf("ready %q: %v", ready, err)
		}
		if got := c.logged("serving"); got != (ready != "") {
			t.Errorf("ready %q: the child had logged its line when startChild returned: %v", ready, got)
		}
		if err := c.stop(); err != nil {
			t.Errorf("ready %q: stop: %v", ready, err)
		}
	}
}

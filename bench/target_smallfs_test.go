package bench

import (
	"context"
	"errors"
	"io"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The mount help lists options as "  name=VALUE  help" with wrapped
// help lines below; prose, flags and fstab examples are not options.
func TestHelpOptions(t *testing.T) {
	help := `Usage: smallfs mount [FLAGS] DEVICE MOUNTPOINT
  /srv/small.img  /srv/small  fuse.smallfs  defaults,nofail  0  0
Flags:
  -f, --foreground   stay in the foreground, log to stderr
  --NAME[=VALUE]     any smallfs option below
Generic mount options (fstab(5)), honoured by the kernel:
  ro, rw, dev, nodev, suid, nosuid, exec, noexec
  suid is given.
smallfs options:
  a_very_long_option_name=VALUE one space when the name fills the column
  commit_interval=DURATION   commit at least this often: the most a crash
                             loses of work not fsynced (default 5s)
  allow_other                let other users reach the files
  iobuf_pool=on|off          pool I/O buffers (default on)
  debug`
	want := map[string]string{"a_very_long_option_name": "VALUE", "commit_interval": "DURATION", "allow_other": "", "iobuf_pool": "on|off", "debug": ""}
	if got := helpOptions(help); !maps.Equal(got, want) {
		t.Errorf("helpOptions = %v, want %v", got, want)
	}
}

// --pools runs "smallfs-nopool" with PoolOption once `smallfs mount
// --help` lists it, and "smallfs" with the pools on explicitly; before
// that, the nopool target is skipped with the reason.
func TestPoolsFollowTheHelp(t *testing.T) {
	for _, c := range []struct {
		line    string
		targets map[string]string // name to -o options
		skipped bool
	}{
		{"  iobuf_pool=on|off          pool I/O buffers (default on)",
			map[string]string{"smallfs": "x=1,iobuf_pool=on", "smallfs-nopool": "x=1,iobuf_pool=off"}, false},
		{"  iobuf_pool=BOOL            pool I/O buffers",
			map[string]string{"smallfs": "x=1", "smallfs-nopool": "x=1,iobuf_pool=off"}, false},
		{"  debug                      log every request",
			map[string]string{"smallfs": "x=1"}, true},
	} {
		bin := filepath.Join(t.TempDir(), "smallfs")
		script := "#!/bin/sh\ncat <<'END'\nsmallfs options:\n" + c.line + "\nEND\n"
		if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		var skipped []string
		ts := smallfsTargets(context.Background(), &config{pools: true, smallfsOpts: "x=1"}, bin, &scratch{},
			func(name string, err error) { skipped = append(skipped, name+": "+err.Error()) })
		got := map[string]string{}
		for _, tg := range ts {
			got[tg.Name()] = tg.(*smallfsTarget).opts
		}
		if !maps.Equal(got, c.targets) || (len(skipped) == 1) != c.skipped {
			t.Errorf("help %q: targets %v, skipped %v; want %v, skipped %v", c.line, got, skipped, c.targets, c.skipped)
		}
	}
	if _, err := parseFlags([]string{"--pools", "--smallfs-opts", "debug,iobuf_pool=off"}, io.Discard); !errors.Is(err, ErrUsage) {
		t.Errorf("--pools with iobuf_pool in --smallfs-opts: %v, want a usage error", err)
	}
}

// --checksums adds "smallfs-nosum", mounted as "smallfs" is and made by
// mkfs with NoSumsFlag, once `smallfs mkfs --help` lists the flag; before
// that it is skipped with the reason.
func TestChecksumsFollowTheMkfsHelp(t *testing.T) {
	for _, c := range []struct {
		line   string
		nosum  bool
		reason string
	}{
		{"  --no-data-checksums  keep no checksum of file data", true, ""},
		{"  --force              overwrite what DEVICE holds", false, "smallfs-nosum: n/a"},
	} {
		bin := filepath.Join(t.TempDir(), "smallfs")
		script := "#!/bin/sh\n[ \"$1 $2\" = 'mkfs --help' ] || exit 2\ncat <<'END'\nFlags:\n" + c.line + "\nEND\n"
		if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		var skipped []string
		ts := smallfsTargets(context.Background(), &config{checksums: true, smallfsOpts: "x=1"}, bin, &scratch{},
			func(name string, err error) { skipped = append(skipped, name+": "+err.Error()) })
		got := map[string]string{}
		for _, tg := range ts {
			st := tg.(*smallfsTarget)
			got[st.Name()] = st.opts + " mkfs" + strings.Join(append([]string{""}, st.mkfs...), " ")
		}
		want := map[string]string{"smallfs": "x=1 mkfs"}
		if c.nosum {
			want["smallfs-nosum"] = "x=1 mkfs " + NoSumsFlag
		}
		if !maps.Equal(got, want) {
			t.Errorf("help %q: targets %v, want %v", c.line, got, want)
		}
		if c.reason == "" && len(skipped) != 0 || c.reason != "" && (len(skipped) != 1 || !strings.HasPrefix(skipped[0], c.reason)) {
			t.Errorf("help %q: skipped %v, want %q", c.line, skipped, c.reason)
		}
	}
}

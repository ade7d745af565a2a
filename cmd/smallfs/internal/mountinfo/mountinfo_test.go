package mountinfo

import (
	"errors"
	"strings"
	"testing"
)

const table = `22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
30 22 0:40 / /mnt rw,nosuid,nodev shared:5 - fuse.smallfs /tmp/a.img rw,sync,user_id=0,group_id=0
31 22 0:41 / /mnt\040dir rw - fuse.smallfs /tmp/b\134c.img rw
garbage line
32 30 0:42 / /mnt ro,nosuid,nodev - fuse.smallfs /tmp/c.img ro
`

func TestFind(t *testing.T) {
	for _, tc := range []struct {
		dir  string
		want Mount
	}{
		{"/", Mount{Dev: "8:1", Mountpoint: "/", Type: "ext4", Source: "/dev/sda1", Options: "rw,relatime", SuperOptions: "rw"}},
		{"/mnt", Mount{Dev: "0:42", Mountpoint: "/mnt", Type: "fuse.smallfs", Source: "/tmp/c.img", Options: "ro,nosuid,nodev", SuperOptions: "ro"}},
		{"/mnt dir", Mount{Dev: "0:41", Mountpoint: "/mnt dir", Type: "fuse.smallfs", Source: `/tmp/b\c.img`, Options: "rw", SuperOptions: "rw"}},
	} {
		got, err := find(strings.NewReader(table), tc.dir)
		if err != nil || got != tc.want {
			t.Errorf("find(%q) = %+v, %v; want %+v", tc.dir, got, err, tc.want)
		}
	}
	if _, err := find(strings.NewReader(table), "/nowhere"); !errors.Is(err, ErrNotMounted) {
		t.Errorf("find(/nowhere) = %v, want ErrNotMounted", err)
	}
}

func TestParseAll(t *testing.T) {
	all, err := parseAll(strings.NewReader(table))
	if err != nil || len(all) != 4 || all[3].Source != "/tmp/c.img" || all[1].SuperOptions != "rw,sync,user_id=0,group_id=0" {
		t.Errorf("parseAll = %+v, %v; want 4 mounts, garbage skipped", all, err)
	}
}

func TestUnescape(t *testing.T) {
	for in, want := range map[string]string{
		`plain`: "plain", `a\040b`: "a b", `tab\011`: "tab\t", `\134`: `\`, `end\04`: `end\04`, `\999`: `\999`,
	} {
		if got := unescape(in); got != want {
			t.Errorf("unescape(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestFindLive(t *testing.T) {
	m, err := Find("/")
	if err != nil {
		t.Skipf("no %s here: %v", Path, err)
	}
	if m.Mountpoint != "/" || m.Type == "" || !strings.Contains(m.Dev, ":") {
		t.Errorf("Find(/) = %+v", m)
	}
}

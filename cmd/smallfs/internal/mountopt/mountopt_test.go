package mountopt

import (
	"errors"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	sfuse "github.com/smallfs/smallfs/fs/fuse"
)

func TestApplyGeneric(t *testing.T) {
	for _, tc := range []struct {
		opts    string
		kernel  string
		ro      bool
		ignored []string
	}{
		{"", "rw,nodev,nosuid", false, nil},
		{"defaults", "rw,nodev,nosuid", false, []string{"defaults"}},
		{"ro", "ro,nodev,nosuid", true, nil},
		{"ro,rw", "rw,nodev,nosuid", false, nil},
		{"dev,suid", "rw,dev,suid", false, nil},
		{"nodev,nosuid,noexec,noatime", "rw,nodev,nosuid,noexec,noatime", false, nil},
		{"noexec,exec", "rw,nodev,nosuid", false, nil},
		{"relatime,nodiratime,sync,dirsync,lazytime", "rw,nodev,nosuid,nodiratime,relatime,lazytime,sync,dirsync", false, nil},
		{"noatime,atime,strictatime", "rw,nodev,nosuid,strictatime", false, nil},
		{"user,users,auto,noauto,nofail,_netdev,x-systemd.automount,comment=\"a,b\"", "rw,nodev,nosuid", false,
			[]string{"user", "users", "auto", "noauto", "nofail", "_netdev", "x-systemd.automount", "comment=a,b"}},
	} {
		c := Defaults()
		if err := c.Apply(tc.opts); err != nil {
			t.Errorf("Apply(%q): %v", tc.opts, err)
			continue
		}
		if got := strings.Join(c.KernelOptions(), ","); got != tc.kernel {
			t.Errorf("Apply(%q): kernel options %q, want %q", tc.opts, got, tc.kernel)
		}
		if c.ReadOnly != tc.ro || (c.Flags&syscall.MS_RDONLY != 0) != tc.ro {
			t.Errorf("Apply(%q): ReadOnly %v flags %#x, want ro=%v", tc.opts, c.ReadOnly, c.Flags, tc.ro)
		}
		if !reflect.DeepEqual(c.Ignored, tc.ignored) {
			t.Errorf("Apply(%q): ignored %q, want %q", tc.opts, c.Ignored, tc.ignored)
		}
	}
}

func TestApplySmallfsOptions(t *testing.T) {
	c := Defaults()
	err := c.Apply("commit_interval=2.5,entry_timeout=0,attr_timeout=500ms,negative_timeout=10," +
		"allow_other,default_permissions,fsname=img,subtype=x,log_level=warn,log_format=json," +
		"log_file=/tmp/l,metrics_addr=127.0.0.1:9567,no_open=on,iobuf_pool=off,zero_ahead=off,gc_percent=80,uring=off,readahead=512K")
	if err != nil {
		t.Fatal(err)
	}
	want := Defaults()
	want.CommitInterval = 2500 * time.Millisecond
	want.EntryTimeout = 0
	want.AttrTimeout = 500 * time.Millisecond
	want.NegativeTimeout = 10 * time.Second
	want.AllowOther = true
	want.Permissions = sfuse.PermissionsKernel
	want.FsName = "img"
	want.LogLevel = logrus.WarnLevel
	want.LogFormat = "json"
	want.LogFile = "/tmp/l"
	want.MetricsAddr = "127.0.0.1:9567"
	want.NoOpen = true
	want.IobufPool = false
	want.ZeroAhead = false
	want.Readahead = 512 << 10
	want.GCPercent = 80
	want.Uring = sfuse.UringOff
	if !reflect.DeepEqual(c, want) {
		t.Errorf("got  %+v\nwant %+v", c, want)
	}
}

func TestDebugRaisesLevel(t *testing.T) {
	c := Defaults()
	if err := c.Apply("log_level=trace,debug"); err != nil {
		t.Fatal(err)
	}
	if !c.Debug || c.LogLevel != logrus.TraceLevel {
		t.Errorf("debug after trace: Debug %v level %v, want true trace", c.Debug, c.LogLevel)
	}
	c = Defaults()
	if err := c.Apply("debug"); err != nil {
		t.Fatal(err)
	}
	if c.LogLevel != logrus.DebugLevel {
		t.Errorf("debug: level %v, want debug", c.LogLevel)
	}
}

func TestApplyErrors(t *testing.T) {
	for _, tc := range []struct {
		opts string
		want error
		msgs []string
	}{
		{"bogus", ErrUnknownOption, []string{`"bogus"`}},
		{"allow_root", ErrUnknownOption, nil},
		{"allow_other=1", ErrBadValue, []string{"takes no value"}},
		{"log_level", ErrBadValue, []string{"needs a value"}},
		{"no_open", ErrBadValue, []string{"needs a value"}},
		{"uring=yes", ErrBadValue, []string{"want auto, on or off"}},
		{"iobuf_pool=yes", ErrBadValue, []string{"on or off"}},
		{"readahead=1K", ErrBadValue, []string{"from 4K to 64M"}},
		{"readahead=65M", ErrBadValue, []string{"from 4K to 64M"}},
		{"readahead=lots", ErrBadValue, []string{"from 4K to 64M"}},
		{"commit_interval=0", ErrBadValue, []string{"positive"}},
		{"procs=0", ErrBadValue, []string{"auto or a number"}},
		{"procs=many", ErrBadValue, []string{"auto or a number"}},
		{"gc_percent=5", ErrBadValue, []string{"from 10 to 1000"}},
		{"gc_percent=lots", ErrBadValue, []string{"auto or a number"}},
		{"flush_on_close=1", ErrBadValue, []string{"on or off"}},
		{"commit_interval=-1", ErrBadValue, nil},
		{"commit_interval=NaN", ErrBadValue, nil},
		{"commit_interval=1e300", ErrBadValue, []string{"too long"}},
		{"entry_timeout=soon", ErrBadValue, []string{"neither seconds"}},
		{"entry_timeout=-1s", ErrBadValue, []string{"negative"}},
		{"log_level=panic", ErrBadValue, nil},
		{"log_format=xml", ErrBadValue, nil},
		{"log_file=", ErrBadValue, nil},
		{"metrics_addr=0.0.0.0:9567", ErrBadValue, []string{"not a loopback"}},
		{"metrics_addr=9567", ErrBadValue, nil},
		{"bogus,log_format=xml", ErrUnknownOption, []string{`"bogus"`, `"log_format=xml"`}},
	} {
		c := Defaults()
		c.Ignored = []string{"keep"}
		before := c.String()
		err := c.Apply("ro," + tc.opts)
		if !errors.Is(err, tc.want) {
			t.Errorf("Apply(%q) = %v, want %v", tc.opts, err, tc.want)
			continue
		}
		for _, m := range tc.msgs {
			if !strings.Contains(err.Error(), m) {
				t.Errorf("Apply(%q) = %q, want it to mention %s", tc.opts, err, m)
			}
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("Apply(%q): error spans lines: %q", tc.opts, err)
		}
		if c.String() != before || c.ReadOnly || len(c.Ignored) != 1 {
			t.Errorf("Apply(%q) failed but changed the config to %s", tc.opts, c)
		}
	}
}

func TestString(t *testing.T) {
	c := Defaults()
	if err := c.Apply("ro,allow_other,debug,fsname=d,log_file=syslog,metrics_addr=localhost:1"); err != nil {
		t.Fatal(err)
	}
	want := "ro,nodev,nosuid,allow_other,debug,fsname=d,commit_interval=5s,entry_timeout=1h0m0s," +
		"attr_timeout=1h0m0s,negative_timeout=1h0m0s,no_open=off,uring=auto,flush_on_close=off,procs=auto,gc_percent=auto,iobuf_pool=on,readahead=2M,zero_ahead=on,log_level=debug,log_format=text," +
		"log_file=syslog,metrics_addr=localhost:1"
	if got := c.String(); got != want {
		t.Errorf("String() =\n%s\nwant\n%s", got, want)
	}
}

func TestSpecsAreApplicable(t *testing.T) {
	for _, s := range Specs() {
		opt := s.Name
		if s.Value != "" {
			opt += "=" + map[string]string{
				"DURATION": "3", "SECONDS": "3", "NAME": "n", "TYPE": "t", "LEVEL": "debug",
				"FORMAT": "json", "PATH": "/p", "HOST:PORT": "[::1]:80", "on|off": "off", "auto|on|off": "on", "N|auto": "2", "PERCENT|auto": "50", "SIZE|off": "512K",
			}[s.Value]
		}
		c := Defaults()
		if err := c.Apply(opt); err != nil {
			t.Errorf("spec %s: Apply(%q): %v", s.Name, opt, err)
		}
		if s.Help == "" || strings.Contains(s.Flag(), "_") {
			t.Errorf("spec %s: help %q flag %q", s.Name, s.Help, s.Flag())
		}
	}
}

func TestParseArgs(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		dev    string
		mnt    string
		fg     bool
		config string // options applied to Defaults for the expected config
	}{
		{[]string{"img", "/mnt"}, "img", "/mnt", false, ""},
		{[]string{"img", "/mnt", "-o", "ro,noatime", "-o", "rw"}, "img", "/mnt", false, "ro,noatime,rw"},
		{[]string{"-o", "ro", "-f", "img", "/mnt"}, "img", "/mnt", true, "ro"},
		{[]string{"-oro", "smallfs#img", "/mnt", "-fd"}, "img", "/mnt", true, "ro,debug"},
		{[]string{"-s", "-v", "-n", "-t", "fuse.smallfs", "img", "/mnt"}, "img", "/mnt", false, ""},
		{[]string{"-f", "--", "-img", "/mnt"}, "-img", "/mnt", true, ""},
	} {
		got, err := ParseArgs(tc.args)
		if err != nil {
			t.Errorf("ParseArgs(%q): %v", tc.args, err)
			continue
		}
		want := Args{Device: tc.dev, Mountpoint: tc.mnt, Foreground: tc.fg, Config: Defaults()}
		if err := want.Config.Apply(tc.config); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("ParseArgs(%q) =\n%+v\nwant\n%+v", tc.args, got, want)
		}
	}
}

func TestParseArgsHelpVersion(t *testing.T) {
	if a, err := ParseArgs([]string{"img", "--help", "-o", "bogus"}); err != nil || !a.Help {
		t.Errorf("--help: %+v, %v", a, err)
	}
	if a, err := ParseArgs([]string{"-V"}); err != nil || !a.Version {
		t.Errorf("-V: %+v, %v", a, err)
	}
}

func TestParseArgsErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want error
	}{
		{nil, ErrUsage},
		{[]string{"img"}, ErrUsage},
		{[]string{"img", "/mnt", "extra"}, ErrUsage},
		{[]string{"img", "/mnt", "-o"}, ErrUsage},
		{[]string{"img", "/mnt", "-x"}, ErrUsage},
		{[]string{"img", "/mnt", "-t", "ext4"}, ErrUsage},
		{[]string{"smallfs#", "/mnt"}, ErrUsage},
		{[]string{"img", "/mnt", "-o", "bogus", "-o", "log_level=x"}, ErrUnknownOption},
		{[]string{"img", "/mnt", "-o", "bogus", "-o", "log_level=x"}, ErrBadValue},
	} {
		if _, err := ParseArgs(tc.args); !errors.Is(err, tc.want) {
			t.Errorf("ParseArgs(%q) = %v, want %v", tc.args, err, tc.want)
		}
	}
}

func TestCheckContradictions(t *testing.T) {
	c := Defaults()
	if err := c.Check(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	if err := c.Apply("no_open=on"); err != nil {
		t.Fatal(err)
	}
	if err := c.Apply("flush_on_close=on"); err != nil {
		t.Fatal(err) // each list alone is fine; the pair is not
	}
	if err := c.Check(); !errors.Is(err, ErrBadValue) || !strings.Contains(err.Error(), "no_open=off") {
		t.Errorf("no_open=on with flush_on_close=on: %v", err)
	}
}

func TestAutoProcs(t *testing.T) {
	for cpus, want := range map[int]int{0: 2, 1: 2, 2: 3, 8: 9} {
		if got := AutoProcs(cpus); got != want {
			t.Errorf("AutoProcs(%d) = %d, want %d", cpus, got, want)
		}
	}
}

// TestAtimeModesLaterWins: of noatime, relatime and strictatime the last
// one given counts, as the kernel honours only one.
func TestAtimeModesLaterWins(t *testing.T) {
	for opts, want := range map[string]string{
		"noatime,relatime":    "rw,nodev,nosuid,relatime",
		"relatime,noatime":    "rw,nodev,nosuid,noatime",
		"strictatime,noatime": "rw,nodev,nosuid,noatime",
		"noatime,strictatime": "rw,nodev,nosuid,strictatime",
	} {
		c := Defaults()
		if err := c.Apply(opts); err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(c.KernelOptions(), ","); got != want {
			t.Errorf("Apply(%q): %q, want %q", opts, got, want)
		}
	}
}

// TestRemountOptions: what mount(8) hands the helper on a remount is
// accepted (the kernel's own user_id=, group_id=, max_read= only there),
// and the flags for mount(2) keep what no option names.
func TestRemountOptions(t *testing.T) {
	const (
		ro, nosuid, nodev, noexec = syscall.MS_RDONLY, syscall.MS_NOSUID, syscall.MS_NODEV, syscall.MS_NOEXEC
		noatime, relatime, strict = syscall.MS_NOATIME, syscall.MS_RELATIME, syscall.MS_STRICTATIME
		sync, nodiratime          = syscall.MS_SYNCHRONOUS, syscall.MS_NODIRATIME
	)
	current := KernelFlags("rw,noatime", "rw,sync,user_id=0,group_id=0,max_read=1048576")
	if current != noatime|sync {
		t.Fatalf("KernelFlags = %#x, want noatime|sync", current)
	}
	if got := KernelFlags("ro,nosuid,nodev"); got != ro|nosuid|nodev|strict {
		t.Errorf("KernelFlags without an atime mode = %#x, want strictatime", got)
	}
	for _, tc := range []struct {
		opts string
		want uintptr
	}{
		// As mount(8) calls mount.fuse3, which adds dev,suid for root.
		{"ro,noatime,remount,user_id=0,group_id=0,max_read=1048576,dev,suid", ro | noatime | sync},
		{"rw,noatime,remount,nosuid,user_id=0,group_id=0,max_read=1048576,dev", nosuid | noatime | sync},
		{"ro,noatime,remount,relatime,dev,suid", ro | relatime | sync},
		// By hand: what is not named stays, atime flags included.
		{"remount,ro", ro | sync},
		{"remount,noexec", noexec | sync},
		{"remount,async,nodiratime", noatime | nodiratime},
		{"remount,strictatime", strict | sync},
		{"remount,ro,commit_interval=1h,log_file=/x", ro | sync},
	} {
		c := Defaults()
		if err := c.Apply(tc.opts); err != nil {
			t.Errorf("Apply(%q): %v", tc.opts, err)
			continue
		}
		if err := c.Check(); err != nil || !c.Remount {
			t.Errorf("Apply(%q): Check %v, Remount %v", tc.opts, err, c.Remount)
		}
		if got := c.RemountFlags(current); got != tc.want {
			t.Errorf("Apply(%q): RemountFlags = %#x, want %#x", tc.opts, got, tc.want)
		}
	}
	c := Defaults()
	if err := c.Apply("user_id=0"); err != nil {
		t.Fatal(err)
	}
	if err := c.Check(); !errors.Is(err, ErrUnknownOption) || !strings.Contains(err.Error(), `"user_id=0": only a remount`) {
		t.Errorf("user_id=0 without remount: %v", err)
	}
}

func TestReadaheadValues(t *testing.T) {
	for v, want := range map[string]int64{"off": -1, "0": -1, "4K": 4096, "512k": 512 << 10, "2M": 2 << 20, "64M": 64 << 20, "1048576": 1 << 20} {
		c := Defaults()
		if err := c.Apply("readahead=" + v); err != nil || c.Readahead != want {
			t.Errorf("readahead=%s: %d, %v; want %d", v, c.Readahead, err, want)
		}
		if back := windowString(c.Readahead); mustWindow(t, back) != want {
			t.Errorf("readahead=%s listed as %s, which reads back otherwise", v, back)
		}
	}
}

func mustWindow(t *testing.T, v string) int64 {
	t.Helper()
	n, err := parseWindow(v)
	if err != nil {
		t.Fatalf("readahead=%s as listed does not parse: %v", v, err)
	}
	return n
}

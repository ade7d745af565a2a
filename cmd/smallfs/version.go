package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/smallfs/smallfs/fs/format"
)

// version is set at link time: -ldflags "-X main.version=v1.2.3".
var version = "devel"

// versionString is the release plus, for a build from a checkout, the
// commit it was built from.
func versionString() string {
	v := version
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				v += "+" + s.Value[:12]
			}
		}
	}
	return v
}

func (a *app) version() {
	fmt.Fprintf(a.stdout, "smallfs %s (on-disk format %d, %s)\n", versionString(), format.FormatVersion, runtime.Version())
}

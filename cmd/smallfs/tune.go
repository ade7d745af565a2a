package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os/signal"
	"syscall"

	"github.com/smallfs/smallfs/fs/device"
	"github.com/smallfs/smallfs/fs/volume"
)

type tuneOpts struct{ checksums, noChecksums bool }

func tuneFlags() (*flag.FlagSet, *tuneOpts) {
	fs := newFlags("tune")
	o := &tuneOpts{}
	fs.BoolVar(&o.checksums, "data-checksums", false, "")
	fs.BoolVar(&o.noChecksums, "no-data-checksums", false, "")
	return fs, o
}

// tune changes a feature of a filesystem that is not mounted: it gives
// every block of file data a checksum, or takes them away.
func (a *app) tune(args []string) int {
	flags, o := tuneFlags()
	pos, code, done := a.parseCommand(flags, tuneHelp, args, []string{"DEVICE"}, exitUsage)
	if done {
		return code
	}
	if o.checksums == o.noChecksums {
		return a.failf(exitUsage, "tune: say what to change: --data-checksums or --no-data-checksums")
	}
	path := pos[0]
	// A mounted device is locked: this fails rather than change it
	// under its daemon.
	dev, err := openDevice(path, device.Options{})
	if err != nil {
		return a.failf(exitError, "tune: %v", err)
	}
	defer dev.Close()
	show := a.status("tune")
	defer show("")
	vol, err := volume.Open(dev, volume.Options{CommitInterval: -1, Logger: quiet(), Progress: progressLine(show)})
	if err != nil {
		return a.failf(exitError, "tune: %v", volumeError(path, err))
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if o.checksums {
		err = vol.AddBlockSums(ctx, func(p volume.ChecksumProgress) {
			show(fmt.Sprintf("giving file data checksums: %d%% (%s of %s)", 100*p.Done/max(p.Total, 1),
				human(p.Done*uint64(vol.StatFS().BlockSize)), human(p.Total*uint64(vol.StatFS().BlockSize))))
		})
	} else {
		err = vol.DropBlockSums()
	}
	if cerr := vol.Close(); err == nil {
		err = cerr
	}
	show("")
	switch {
	case errors.Is(err, context.Canceled):
		return a.failf(exitError, "tune: %s: stopped part way: the image mounts, reading the blocks not covered yet unverified; run the same command again to finish", path)
	case err != nil:
		return a.failf(exitError, "tune: %s: %v", path, err)
	case o.checksums:
		fmt.Fprintf(a.stdout, "%s: every block of file data has a checksum; reads are verified (an older smallfs cannot mount the image now: smallfs tune --no-data-checksums takes them away)\n", path)
	default:
		fmt.Fprintf(a.stdout, "%s: file data has no checksums now; reads are not verified\n", path)
	}
	return exitOK
}

package main

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"

	"github.com/smallfs/smallfs/fs/device"
	"github.com/smallfs/smallfs/fs/format"
)

type mkfsOpts struct {
	size      int64
	blockSize uint
	force     bool
	prealloc  device.Prealloc
}

func mkfsFlags() (*flag.FlagSet, *mkfsOpts) {
	fs := newFlags("mkfs")
	o := &mkfsOpts{blockSize: format.DefaultBlockSize}
	fs.Func("size", "", func(v string) (err error) {
		o.size, err = parseSize(v)
		return err
	})
	fs.UintVar(&o.blockSize, "block-size", format.DefaultBlockSize, "")
	fs.BoolVar(&o.force, "force", false, "")
	fs.Func("preallocate", "", func(v string) (err error) {
		o.prealloc, err = device.ParsePrealloc(v)
		return err
	})
	return fs, o
}

// mkfs makes a filesystem and prints what it made.
func (a *app) mkfs(args []string) int {
	flags, o := mkfsFlags()
	pos, code, done := a.parseCommand(flags, mkfsHelp, args, []string{"DEVICE"}, exitUsage)
	if done {
		return code
	}
	if o.blockSize > format.MaxBlockSize || !format.ValidBlockSize(uint32(o.blockSize)) {
		return a.failf(exitUsage, "mkfs: block size %d: want a power of two from %d to %d",
			o.blockSize, format.MinBlockSize, format.MaxBlockSize)
	}
	path := pos[0]
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) && o.size == 0 {
		return a.failf(exitError, "mkfs: %s does not exist; give --size to create an image file", path)
	}
	show := a.status("mkfs")
	dev, err := openDevice(path, device.Options{Create: o.size > 0, Size: o.size, Prealloc: o.prealloc,
		Progress: func(done, total int64) { show(fmt.Sprintf("writing zeros: %d%%", done*100/total)) }})
	show("")
	if err != nil {
		return a.failf(exitError, "mkfs: %v", err)
	}
	defer dev.Close()
	if !o.force {
		if err := refuseExisting(path, dev); err != nil {
			return a.failf(exitError, "mkfs: %v", err)
		}
	}
	if err := makeFilesystem(dev, uint32(o.blockSize), o.force); err != nil {
		return a.failf(exitError, "mkfs: %s: %v", path, err)
	}
	sb, err := format.ReadSuperblock(dev)
	if err != nil {
		return a.failf(exitError, "mkfs: %s: reading back the superblock: %v", path, err)
	}
	fmt.Fprintf(a.stdout, "made smallfs on %s: %s, %d blocks of %d bytes, log %d blocks, uuid %s\n",
		path, human(sb.Blocks*uint64(sb.BlockSize)), sb.Blocks, sb.BlockSize, sb.Log.Len, uuidString(sb.UUID))
	return exitOK
}

// refuseExisting stops mkfs from overwriting a filesystem by accident:
// anything carrying the smallfs magic counts, even a newer or damaged one.
func refuseExisting(path string, dev device.Device) error {
	sb, err := format.ReadSuperblock(dev)
	switch {
	case err == nil:
		return fmt.Errorf("%s already holds a smallfs filesystem (%s, uuid %s); --force overwrites it",
			path, human(sb.Blocks*uint64(sb.BlockSize)), uuidString(sb.UUID))
	case errors.Is(err, format.ErrNotSmallfs):
		return nil
	}
	return fmt.Errorf("%v; --force overwrites it", formatError(path, err))
}

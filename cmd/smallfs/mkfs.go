package main

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"

	"github.com/smallfs/smallfs/fs/device"
	"github.com/smallfs/smallfs/fs/format"
)

type mkfsOpts struct {
	size      int64
	blockSize uint
	force     bool
	prealloc  device.Prealloc
	owner     rootOwner
	// noChecksums makes the filesystem without data checksums, for an
	// older smallfs to mount.
	noChecksums bool
}

// rootOwner is who owns a new filesystem's root directory.
type rootOwner struct{ uid, gid uint32 }

// defaultRootOwner is whoever runs mkfs (its real ids, as mke2fs's
// root_owner): a user's own image is theirs to write in once mounted;
// root's stays root's.
func defaultRootOwner() rootOwner {
	return rootOwner{uint32(os.Getuid()), uint32(os.Getgid())}
}

// noOwner is (uid_t)-1 and (gid_t)-1: to chown(2) "leave it as it is",
// and no owner any file can have.
const noOwner = 1<<32 - 1

// parseRootOwner reads --root-owner UID:GID.
func parseRootOwner(v string) (rootOwner, error) {
	u, g, ok := strings.Cut(v, ":")
	uid, uerr := strconv.ParseUint(u, 10, 32)
	gid, gerr := strconv.ParseUint(g, 10, 32)
	switch {
	case !ok || uerr != nil || gerr != nil:
		return rootOwner{}, fmt.Errorf("want UID:GID, two numbers such as 1000:1000")
	case uid == noOwner || gid == noOwner:
		return rootOwner{}, fmt.Errorf("%d is -1 as a uid_t or gid_t, which chown(2) takes for \"leave it as it is\": no file is owned by it", uint64(noOwner))
	}
	return rootOwner{uint32(uid), uint32(gid)}, nil
}

func mkfsFlags() (*flag.FlagSet, *mkfsOpts) {
	fs := newFlags("mkfs")
	o := &mkfsOpts{blockSize: format.DefaultBlockSize, owner: defaultRootOwner()}
	fs.Func("size", "", func(v string) (err error) {
		o.size, err = parseSize(v)
		return err
	})
	fs.UintVar(&o.blockSize, "block-size", format.DefaultBlockSize, "")
	fs.BoolVar(&o.force, "force", false, "")
	fs.BoolVar(&o.noChecksums, "no-data-checksums", false, "")
	fs.Func("root-owner", "", func(v string) (err error) {
		o.owner, err = parseRootOwner(v)
		return err
	})
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
	if err := makeFilesystem(dev, o); err != nil {
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

// refuseExisting stops mkfs from overwriting data by accident, as
// mkfs.xfs does: anything carrying the smallfs magic counts, even a newer
// or damaged one, and so does another format (signature.go) or any byte
// that is not zero at the start of the device.
func refuseExisting(path string, dev device.Device) error {
	sb, err := format.ReadSuperblock(dev)
	switch {
	case err == nil:
		return fmt.Errorf("%s already holds a smallfs filesystem (%s, uuid %s); --force overwrites it",
			path, human(sb.Blocks*uint64(sb.BlockSize)), uuidString(sb.UUID))
	case !errors.Is(err, format.ErrNotSmallfs):
		return fmt.Errorf("%v; --force overwrites it", formatError(path, err))
	}
	found, err := foreignData(dev)
	switch {
	case err != nil:
		return fmt.Errorf("%s: %w", path, err)
	case found != "":
		return fmt.Errorf("%s holds %s; --force overwrites it", path, found)
	}
	return nil
}

package main

import (
	"errors"

	"github.com/sirupsen/logrus"

	"github.com/smallfs/smallfs/cmd/smallfs/internal/mountopt"
	"github.com/smallfs/smallfs/fs/device"
)

// errNotWired is returned while fs/volume lacks Open and Mkfs.
var errNotWired = errors.New("this command needs volume.Open and volume.Mkfs, which fs/volume does not provide yet")

// openSession opens the device and the volume and mounts them.
func openSession(p mountopt.Args, log logrus.FieldLogger) (session, error) {
	return nil, errNotWired
}

// readUsage opens the volume read-only for info's usage section.
func readUsage(dev device.Device) (*usageInfo, error) { return nil, nil }

func (a *app) mkfs(args []string) int { return a.failf(exitError, "mkfs: %v", errNotWired) }
func (a *app) fsck(args []string) int { return a.failf(fsckOperational, "fsck: %v", errNotWired) }

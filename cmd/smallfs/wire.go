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

// makeFilesystem writes an empty filesystem on dev.
func makeFilesystem(dev device.Device, blockSize uint32) error { return errNotWired }

// checkVolume opens the volume on dev, checks it and, with repair,
// repairs it and checks again.
func checkVolume(path string, dev device.Device, repair bool, p progress) (found, left []string, err error) {
	return nil, nil, errNotWired
}

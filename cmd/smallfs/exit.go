package main

// Exit codes. Commands use exitOK, exitError and exitUsage; the mount
// helper form speaks mount(8)'s language and fsck e2fsck's, because
// mount(8), systemd and boot scripts read them.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2

	// mount(8): 1 is incorrect invocation, 32 a mount failure.
	exitHelperUsage   = 1
	exitHelperFailure = 32

	// e2fsck(8).
	fsckClean       = 0
	fsckCorrected   = 1
	fsckUncorrected = 4
	fsckOperational = 8
	fsckUsage       = 16
)

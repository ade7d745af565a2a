// Package daemon starts a process in the background and lets the parent
// wait until it is really serving.
//
// # The model
//
// A mount helper must return only when the filesystem answers, or fail
// with the reason, and leave the server running in the background. The
// parent calls Start, which re-executes the program detached (setsid,
// stdio on /dev/null) with a pipe on descriptor 3 named by the
// SMALLFS_READY_FD variable. The daemon calls Child to find the pipe and,
// once it has checked that its mount answers, Ready; on failure it calls
// Fail with one line. The parent prints nothing itself: Start returns the
// pid, or the daemon's line as the error, or ErrExited when the daemon died
// without a word (the pipe reached EOF) together with its exit status.
//
// # Errors
//
// ErrExited is the only sentinel. An error sent with Fail arrives as plain
// text: its type does not cross the process boundary, so the daemon must
// make the line self-explanatory.
//
// # Costs
//
// One fork and exec per mount; the parent blocks in one read.
package daemon

// Package uring serves a FUSE connection's requests through io_uring
// (the kernel's FUSE over io_uring, Linux 6.14 and later) instead of
// read(2) and writev(2) on /dev/fuse.
//
// The kernel keeps one queue per possible CPU and sends a request to the
// queue of the CPU its caller runs on. The daemon registers entries (a
// header buffer and a payload buffer each) on every queue with an
// IORING_OP_URING_CMD; a request arrives as the completion of such a
// command, and the reply goes back with the next command on the same
// entry, which commits it and fetches the next request: one system call
// per request, where /dev/fuse takes a read and a write.
//
// The header holds the request's fuse_in_header (replaced by the reply's
// fuse_out_header), its per-operation argument, and the payload's length
// and commit ID; the payload holds the other arguments (names, data) and
// then the reply's arguments. INIT, FORGET, INTERRUPT and notifications
// still travel through /dev/fuse.
//
// A queue spends most of its life blocked in io_uring_enter waiting for a
// request. Since Linux 6.5 such a wait counts as iowait, which made an idle
// mount look I/O-bound in top and /proc/pressure/io; the waits pass
// IORING_ENTER_NO_IOWAIT where the kernel reports IORING_FEAT_NO_IOWAIT
// (6.15 and later), and an idle mount then shows next to no iowait
// (figures in docs/PERFORMANCE.md, "Transports: /dev/fuse and io_uring").
package uring

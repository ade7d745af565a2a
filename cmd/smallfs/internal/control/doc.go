// Package control is how `smallfs stats` reaches a running daemon without
// stopping it, and how the figures are printed.
//
// # The model
//
// Each daemon listens on a unix socket in RunDir named after the st_dev
// of its mount (SocketPath). The kernel gives every FUSE mount its own
// device number, and the client reads it from /proc/self/mountinfo, so a
// client finds the socket from the mount point alone and never touches the
// mounted filesystem (a stuck daemon cannot hang it). A connection carries
// one request line, {"op":"stats"}, and one response line holding Stats as
// JSON; {"op":"layout"} answers layout.Figures, measured by a walk of the
// namespace (smallfs info on a mounted device asks for it). The figures
// are gathered when asked; serving them costs the
// filesystem nothing in between.
//
// Stats has one section per layer; a section the daemon cannot fill is
// absent. WriteText prints the human form used by `smallfs stats` and by
// the statedump written on SIGUSR1.
//
// # Locking and lifetime
//
// Listen starts an accept loop; each request runs in its own goroutine and
// calls the source function, which must be safe for concurrent use. Close
// stops the loop, waits for requests in flight and removes the socket. A
// socket left by a killed daemon is replaced by the next Listen on the same
// path; one a live daemon answers on is refused (ErrInUse).
//
// ServeMetrics serves the same figures over HTTP at /metrics in the
// Prometheus text format (written here with the standard library; no
// client library needed), for a loopback address the caller has checked.
//
// # Security
//
// The run directory is created 0700 and the socket is 0600: only the
// daemon's user (normally root) may read the figures.
//
// # Errors
//
// ErrNoDaemon when nothing answers on the socket, ErrInUse when Listen
// finds a live one. Failures of the daemon reach the client as text.
package control

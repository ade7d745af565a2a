// Package nolog gives the logger a library uses when its caller gives
// none: one that discards every entry. The libraries log only lifecycle
// edges and failures, and only where their caller asks (Options.Logger).
package nolog

import (
	"io"

	"github.com/sirupsen/logrus"
)

// New returns a logger that writes nothing. Each call returns a new one,
// so a caller that changes its level or hooks changes no one else's.
func New() *logrus.Logger {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return l
}

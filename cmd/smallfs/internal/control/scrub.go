package control

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"time"
)

// ScrubRequest asks the daemon to read and check every block of file data.
type ScrubRequest struct {
	// Resume continues from where the daemon's last scrub stopped,
	// instead of from the start.
	Resume bool `json:"resume,omitempty"`
	// Rate bounds the bytes read per second; 0: as fast as the device.
	Rate int64 `json:"rate,omitempty"`
}

// ScrubStatus is a scrub's figures: sent as it goes, and once more at the
// end with Done set.
type ScrubStatus struct {
	Blocks     uint64         `json:"blocks"`     // blocks checked
	Bytes      uint64         `json:"bytes"`      // their bytes
	Total      uint64         `json:"total"`      // blocks with a checksum when it began
	Unverified uint64         `json:"unverified"` // blocks in use without a checksum
	Damaged    []DamagedBlock `json:"damaged,omitempty"`
	Took       time.Duration  `json:"took_ns"`
	Stopped    bool           `json:"stopped,omitempty"` // ended before the end of the device: Resume goes on
	Done       bool           `json:"done,omitempty"`
	Error      string         `json:"error,omitempty"`
}

// DamagedBlock is a block of a file whose data does not match its
// checksum.
type DamagedBlock struct {
	Ino   uint64 `json:"ino"`
	Path  string `json:"path"`
	Off   uint64 `json:"offset"`
	Len   uint64 `json:"length"`
	Block uint64 `json:"block"`
	Want  uint32 `json:"recorded"`
	Got   uint32 `json:"checksum"`
}

// scrubReply is one line of the daemon's answer to a scrub request.
type scrubReply struct {
	Scrub *ScrubStatus `json:"scrub,omitempty"`
	Error string       `json:"error,omitempty"`
}

// serveScrub runs a scrub for the client on c, sending its figures a line
// at a time; the client closing c stops it.
func (s *Server) serveScrub(c net.Conn, req ScrubRequest) {
	_ = c.SetDeadline(time.Time{}) // a scrub takes as long as the device does
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	go func() { // the client goes away: stop
		_, _ = bufio.NewReader(c).ReadByte()
		stop()
	}()
	enc := json.NewEncoder(c)
	progress := func(st ScrubStatus) {
		_ = c.SetWriteDeadline(time.Now().Add(10 * time.Second))
		if enc.Encode(scrubReply{Scrub: &st}) != nil {
			stop()
		}
	}
	st, err := s.h.Scrub(ctx, req, progress)
	st.Done = true
	if err != nil && !errors.Is(err, context.Canceled) {
		st.Error = err.Error()
	}
	_ = c.SetWriteDeadline(time.Now().Add(10 * time.Second))
	_ = enc.Encode(scrubReply{Scrub: &st})
}

// Scrub asks the daemon listening at path to read and check every block
// of file data, calls progress with each figure it sends, and returns the
// last. Cancelling ctx stops the scrub (the daemon remembers where, for
// ScrubRequest.Resume). dial bounds the connect.
func Scrub(ctx context.Context, path string, req ScrubRequest, dial time.Duration, progress func(ScrubStatus)) (ScrubStatus, error) {
	c, err := connect(path, dial)
	if err != nil {
		return ScrubStatus{}, err
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	if err := json.NewEncoder(c).Encode(request{Op: "scrub", Scrub: &req}); err != nil {
		return ScrubStatus{}, fmt.Errorf("scrub: %w", err)
	}
	dec := json.NewDecoder(c)
	var last ScrubStatus
	for {
		var r scrubReply
		if err := dec.Decode(&r); err != nil {
			if ctx.Err() != nil {
				last.Stopped = true
				return last, ctx.Err()
			}
			return last, fmt.Errorf("scrub: the daemon stopped answering: %w", err)
		}
		if r.Scrub == nil {
			return last, fmt.Errorf("scrub: daemon refused: %s", r.Error)
		}
		last = *r.Scrub
		if last.Done {
			if last.Error != "" {
				return last, fmt.Errorf("scrub: %s", last.Error)
			}
			return last, nil
		}
		if progress != nil {
			progress(last)
		}
	}
}

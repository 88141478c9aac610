package cluster

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/proctor-run/proctor/value"
)

// Frames on a transport connection, after the handshake: a 4-byte
// big-endian length, then that many bytes holding one envelope (package
// remote/wire, which carries its own version). A length of 0 is a tick
// (the heartbeat of an idle connection: no envelope follows); a length
// past the receiver's MaxFrame closes the connection.
const frameHeaderSize = 4

// DefaultMaxFrame is the largest frame a node accepts unless told
// otherwise (TCPOptions.MaxFrame).
const DefaultMaxFrame = 8 << 20

// ioBufferSize is the size of each connection's read and write buffers:
// frames up to it are read without a copy, and writes are batched into it.
const ioBufferSize = 64 << 10

// Frame errors.
var (
	// ErrFrameTooLarge: a frame longer than the receiver's MaxFrame, or
	// one the sender may not send.
	ErrFrameTooLarge = value.Sentinel("cluster.frame_too_large", value.KindLimit, "frame too large")
)

// tickFrame is what an idle connection's writer sends: a frame of length
// 0.
var tickFrame = [frameHeaderSize]byte{}

// writeFrame appends frame to w with its header.
func writeFrame(w *bufio.Writer, frame []byte) error {
	var h [frameHeaderSize]byte
	binary.BigEndian.PutUint32(h[:], uint32(len(frame)))
	if _, err := w.Write(h[:]); err != nil {
		return err
	}
	_, err := w.Write(frame)
	return err
}

// frameReader reads frames from a connection. A frame that fits the
// buffer is returned in place (no copy); the slice is valid until the
// next call.
type frameReader struct {
	r    *bufio.Reader
	max  int
	big  []byte // for frames larger than the buffer
	skip int    // bytes of the last frame still to discard
}

func newFrameReader(r io.Reader, max int) *frameReader {
	return &frameReader{r: bufio.NewReaderSize(r, ioBufferSize), max: max}
}

// next returns the next frame; ticks are skipped.
func (f *frameReader) next() ([]byte, error) {
	if f.skip > 0 {
		if _, err := f.r.Discard(f.skip); err != nil {
			return nil, err
		}
		f.skip = 0
	}
	var h [frameHeaderSize]byte
	var n uint32
	for n == 0 {
		if _, err := io.ReadFull(f.r, h[:]); err != nil {
			return nil, err
		}
		n = binary.BigEndian.Uint32(h[:])
	}
	switch {
	case uint64(n) > uint64(f.max):
		return nil, fmt.Errorf("%w: %d bytes (at most %d)", ErrFrameTooLarge, n, f.max)
	case int(n) <= f.r.Size():
		b, err := f.r.Peek(int(n))
		if err != nil {
			return nil, noEOF(err)
		}
		f.skip = int(n)
		return b, nil
	}
	// A frame larger than the buffer is read into a buffer that grows as
	// its bytes arrive (doubling from twice the read buffer), so a length
	// announced but not sent costs no memory.
	b := f.big[:0]
	for len(b) < int(n) {
		if len(b) == cap(b) {
			grown := make([]byte, len(b), min(int(n), max(2*cap(b), 2*ioBufferSize)))
			copy(grown, b)
			b = grown
		}
		end := min(cap(b), int(n))
		if _, err := io.ReadFull(f.r, b[len(b):end]); err != nil {
			f.big = nil
			return nil, noEOF(err)
		}
		b = b[:end]
	}
	f.big = b
	if cap(f.big) > 4*ioBufferSize {
		f.big = nil // keep no large buffer around for an idle connection
	}
	return b, nil
}

// noEOF turns an end of stream inside a frame into ErrUnexpectedEOF.
func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

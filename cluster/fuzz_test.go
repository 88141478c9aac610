package cluster

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/proctor-run/proctor/remote/wire"
)

// FuzzFrames feeds arbitrary bytes to a connection's frame reader and each
// frame to the envelope decoder, as a node's reader does: neither may
// panic, a frame is never longer than the limit, and what is read never
// exceeds the input.
func FuzzFrames(f *testing.F) {
	env, _ := wire.Encode(nil, &wire.Envelope{Signal: wire.Kill})
	f.Add(append([]byte{0, 0, 0, byte(len(env))}, env...))
	f.Add([]byte{0, 0, 0, 0})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{0, 0, 0, 3, 1, 2})
	f.Fuzz(func(t *testing.T, in []byte) {
		const max = 1 << 12
		fr := newFrameReader(bytes.NewReader(in), max)
		total := 0
		for {
			b, err := fr.next()
			if err != nil {
				if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, ErrFrameTooLarge) {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if len(b) == 0 || len(b) > max {
				t.Fatalf("frame of %d bytes", len(b))
			}
			total += len(b) + frameHeaderSize
			if total > len(in) {
				t.Fatalf("read %d bytes of %d", total, len(in))
			}
			_, _ = wire.Decode(b)
		}
	})
}

// FuzzHandshake runs both sides of the handshake against arbitrary input:
// no panic, and no success without the key.
func FuzzHandshake(f *testing.F) {
	h, _ := newHello("n0")
	f.Add(h.append(nil))
	f.Add([]byte("PRCT\x01\x00"))
	f.Add([]byte("PRCT\x01\xffname"))
	f.Add(append(h.append(nil), make([]byte, macSize+1)...))
	key, _ := DeriveKeys(testSecret)
	f.Fuzz(func(t *testing.T, in []byte) {
		rw := &fuzzConn{r: bytes.NewReader(in)}
		if name, err := acceptHandshake(rw, key.Handshake, "n1", nil); err == nil {
			t.Fatalf("accepted %q without a proof", name)
		}
		rw = &fuzzConn{r: bytes.NewReader(in)}
		if err := dialHandshake(rw, key.Handshake, "n0", "n1", nil); err == nil {
			t.Fatal("dialed without a proof")
		}
		_, _ = readHello(bytes.NewReader(in))
	})
}

// fuzzConn reads from r and discards what is written.
type fuzzConn struct{ r io.Reader }

func (c *fuzzConn) Read(p []byte) (int, error)  { return c.r.Read(p) }
func (c *fuzzConn) Write(p []byte) (int, error) { return len(p), nil }

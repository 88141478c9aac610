package cluster

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"runtime"
	"testing"
)

// A frame's announced length costs nothing until its bytes arrive: the
// reader grows its buffer with the data, and a frame cut short leaves
// nothing held.
func TestFrameReaderAllocatesAsDataArrives(t *testing.T) {
	// Not parallel: it measures the whole process (goroutines, memory).
	const announced = DefaultMaxFrame
	in := binary.BigEndian.AppendUint32(nil, announced)
	in = append(in, make([]byte, 1000)...)
	fr := newFrameReader(bytes.NewReader(in), DefaultMaxFrame)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := fr.next()
	runtime.ReadMemStats(&after)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("a frame cut short: %v", err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 4*ioBufferSize {
		t.Fatalf("reading 1000 bytes of an announced %d allocated %d", announced, got)
	}
	if fr.big != nil {
		t.Fatalf("a buffer of %d bytes is kept", cap(fr.big))
	}

	// Whole frames of every size still read back as sent.
	for _, size := range []int{1, ioBufferSize, ioBufferSize + 1, 3*ioBufferSize + 7, 5 << 20} {
		frame := bytes.Repeat([]byte{byte(size)}, size)
		frame[size-1] = 0xee
		in := binary.BigEndian.AppendUint32(nil, uint32(size))
		in = append(in, frame...)
		in = append(in, 0, 0, 0, 1, 42)
		fr := newFrameReader(bytes.NewReader(in), DefaultMaxFrame)
		b, err := fr.next()
		if err != nil || !bytes.Equal(b, frame) {
			t.Fatalf("frame of %d: %d bytes, %v", size, len(b), err)
		}
		if b, err := fr.next(); err != nil || !bytes.Equal(b, []byte{42}) {
			t.Fatalf("the frame after one of %d: %v %v", size, b, err)
		}
	}
}

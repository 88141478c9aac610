package remote

import "sync"

// Frames of small envelopes are pooled: a node that sends a steady flow of
// small messages (pg's ops, tells, replies) would otherwise allocate a
// buffer per message for a frame that lives only until its network has
// written or delivered it. A Network hands a frame back with ReleaseFrame
// once nothing reads it any more; one that does not leaves it to the
// garbage collector. The pool's buffers are of one size, which holds
// most of these envelopes (a pg op or a tell of a number, 60 to 100
// bytes) and wastes little on a network that never hands them back.
const frameBufSize = 128

var frameBufs = sync.Pool{New: func() any { return new([frameBufSize]byte) }}

// frameBuf returns an empty buffer for a frame of about size bytes:
// pooled when it fits one, allocated otherwise.
func frameBuf(size int) []byte {
	if size > frameBufSize {
		return make([]byte, 0, size)
	}
	return frameBufs.Get().(*[frameBufSize]byte)[:0]
}

// ReleaseFrame hands back a frame that a Network took from Send, once the
// network has written it (its bytes copied out) or its Receiver has
// handled it, and before nothing else reads it: a later frame reuses the
// buffer. The caller must not touch frame afterwards. Releasing a frame
// is optional; a frame not from the pool is left alone.
func ReleaseFrame(frame []byte) {
	if cap(frame) == frameBufSize {
		frameBufs.Put((*[frameBufSize]byte)(frame[:frameBufSize]))
	}
}

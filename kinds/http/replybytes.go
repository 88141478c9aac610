package http

import (
	nethttp "net/http"

	"github.com/proctor-run/proctor/value"
)

// A reply is a whole value: its body is in memory from when the handler
// makes it until the client has read its last byte, and a client that
// reads slowly, or not at all, holds it up to write_timeout. So a server
// bounds the bytes of large bodies it holds at once (max_reply_bytes):
// without it, a few hundred connections that ask for a large reply and
// never read it would hold gigabytes. Past the bound a reply is dropped
// and the client gets 503 limit at once, to try again when the server
// has sent what it holds. Bodies of at most smallReply bytes do not count
// (they are bounded by max_connections × smallReply, and the socket's
// buffers take most of them at once), so the common request costs
// nothing here.
const smallReply = 64 << 10

// maxReplyBytes is the server's bound on large reply bodies held at once.
func (s *ServerSpec) maxReplyBytes() int64 {
	if s.MaxReplyBytes <= 0 {
		return DefaultMaxReplyBytes
	}
	return s.MaxReplyBytes
}

// holdReply counts resp's body in the bytes being sent and returns how
// many it counted (0 for a small one), for the caller to count out when
// it is sent; past max_reply_bytes resp becomes the 503. A reply larger
// than max_reply_bytes itself can never be sent: it is the handler's
// failure, a 500 (a 503 would have clients retry for ever), logged with
// the route's ID.
func (s *Server) holdReply(w nethttp.ResponseWriter, resp *Response, route string) int64 {
	n := int64(len(resp.Body))
	if n <= smallReply {
		return 0
	}
	max := s.spec.Load().maxReplyBytes()
	if n > max {
		clear(w.Header())
		err := value.NewError(value.KindInternal, "the reply is %d bytes, more than max_reply_bytes (%d): it cannot be sent", n, max)
		s.log.Warn("http route: the handler's reply is larger than max_reply_bytes", "route", route, "error", err)
		*resp = *errorResponse(nethttp.StatusInternalServerError, err)
		return 0
	}
	if s.sending.Add(n) <= max {
		return n
	}
	s.sending.Add(-n)
	// The reply's headers may be the connection's own map: none is sent.
	clear(w.Header())
	*resp = *errorResponse(nethttp.StatusServiceUnavailable, value.NewError(value.KindLimit,
		"the reply is %d bytes, and the server holds max_reply_bytes (%d) of replies being sent: try again later", n, max))
	return 0
}

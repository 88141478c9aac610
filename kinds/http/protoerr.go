package http

import (
	"bytes"
	"net"
	nethttp "net/http"
	"strconv"
	"sync/atomic"

	"github.com/proctor-run/proctor/value"
)

// net/http answers a request it cannot read itself, before any handler
// runs: headers past max_header_bytes (431), a malformed request line or
// header or no Host (400), an unknown transfer coding (501), another
// HTTP version (505). It writes that answer straight to the connection,
// in text/plain, as one write. A plain-HTTP server's connections are
// wrapped so that such a write goes out as the JSON error every other
// answer of the server is, with the same status. (Over TLS net/http must
// be given the *tls.Conn itself, so there the text answers stay.)
//
// A handler's reply is never taken for one: a connection is busy from
// when the server's handler takes a request on it until net/http calls
// it idle (the response's last byte written) or closes it, and only a
// write while it is not busy is looked at.

// cannedHeaders is what net/http puts after the status line of its own
// answers. A response of a handler cannot hold it: net/http sorts the
// header names, so Connection never follows Content-Type.
const cannedHeaders = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"

// errorListener wraps the connections of a plain-HTTP server.
type errorListener struct {
	net.Listener
	maxHeaderBytes int
}

func (l errorListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &errorConn{deadlineConn: deadlineConn{Conn: c}, maxHeaderBytes: l.maxHeaderBytes}, nil
}

// errorConn rewrites net/http's own text answers in JSON; its deadlines
// are a deadlineConn's. Its NetConn (deadlineConn's) is the connection
// accepted, which the server's ConnState hook tracks (as it does a
// *tls.Conn's).
type errorConn struct {
	deadlineConn
	maxHeaderBytes int
	busy           atomic.Bool
}

func (c *errorConn) Write(b []byte) (int, error) {
	if !c.busy.Load() {
		if j, ok := protocolError(b, c.maxHeaderBytes); ok {
			if _, err := c.deadlineConn.Write(j); err != nil {
				return 0, err
			}
			return len(b), nil
		}
	}
	return c.deadlineConn.Write(b)
}

// connKey is the request context's key of its *errorConn.
type connKey struct{}

// markBusy marks the connection of r busy (see errorConn).
func markBusy(r *nethttp.Request) {
	if c, ok := r.Context().Value(connKey{}).(*errorConn); ok {
		c.busy.Store(true)
	}
}

// connState is the servers' ConnState hook: the connection limiter's,
// and an idle connection is no longer busy.
func connState(limiter func(net.Conn, nethttp.ConnState)) func(net.Conn, nethttp.ConnState) {
	return func(nc net.Conn, state nethttp.ConnState) {
		if c, ok := nc.(*errorConn); ok && state != nethttp.StateActive {
			c.busy.Store(false)
		}
		limiter(nc, state)
	}
}

// protocolError is the JSON answer for b when b is one of net/http's own
// text answers.
func protocolError(b []byte, maxHeaderBytes int) ([]byte, bool) {
	const proto = "HTTP/1.1 "
	if len(b) > 4096 || !bytes.HasPrefix(b, []byte(proto)) {
		return nil, false
	}
	i := bytes.Index(b, []byte(cannedHeaders))
	if i < len(proto)+4 || bytes.IndexByte(b[:i], '\n') >= 0 {
		return nil, false
	}
	line := string(b[len(proto):i]) // "431 Request Header Fields Too Large", "400 Bad Request: missing required Host header"
	status, err := strconv.Atoi(line[:3])
	if err != nil || line[3] != ' ' || status < 400 || status > 599 {
		return nil, false
	}
	var e *value.Error
	switch detail := string(b[i+len(cannedHeaders):]); {
	case status == nethttp.StatusRequestHeaderFieldsTooLarge:
		e = value.NewError(value.KindLimit, "the request's headers are larger than max_header_bytes (%d)", maxHeaderBytes)
	case status == nethttp.StatusNotImplemented:
		e = value.NewError(value.KindInvalid, "%s", detail)
	default:
		e = value.NewError(value.KindInvalid, "the request is malformed")
		if j := bytes.IndexByte(b[:i], ':'); j >= 0 {
			e.Message = string(bytes.TrimSpace(b[j+1 : i]))
		}
	}
	resp := errorResponse(status, e)
	out := make([]byte, 0, 160+len(resp.Body))
	out = append(out, proto...)
	out = append(out, line[:3]...)
	out = append(out, ' ')
	out = append(out, nethttp.StatusText(status)...)
	out = append(out, "\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: "...)
	out = strconv.AppendInt(out, int64(len(resp.Body)), 10)
	out = append(out, "\r\n\r\n"...)
	out = append(out, resp.Body...)
	return out, true
}

package http

import (
	"io"
	"net"
	nethttp "net/http"
	"testing"
	"time"
)

// BenchmarkConnDeadlines: one keep-alive request's moves of the read and
// write deadlines, as net/http makes them on a server with read, write
// and idle timeouts and a handler that reads the body to its end, and
// its reads and writes, on a loopback connection as it is (raw) and as
// a plain-HTTP server's (deadlineConn).
func BenchmarkConnDeadlines(b *testing.B) {
	for _, tc := range []struct {
		name string
		wrap func(net.Conn) net.Conn
	}{
		{"raw", func(c net.Conn) net.Conn { return c }},
		{"deadlineConn", func(c net.Conn) net.Conn { return &deadlineConn{Conn: c} }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			defer ln.Close()
			peer, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			defer peer.Close()
			sc, err := ln.Accept()
			if err != nil {
				b.Fatal(err)
			}
			c := tc.wrap(sc)
			defer c.Close()
			go func() { // the client: a request for each response
				buf := make([]byte, 64)
				for {
					if _, err := io.ReadFull(peer, buf); err != nil {
						return
					}
					if _, err := peer.Write(buf); err != nil {
						return
					}
				}
			}()
			req := make([]byte, 64)
			if _, err := c.Write(req); err != nil {
				b.Fatal(err)
			}
			longAgo := time.Unix(1, 0)
			for b.Loop() {
				now := time.Now()
				_ = c.SetReadDeadline(now.Add(time.Second))    // idle
				if _, err := io.ReadFull(c, req); err != nil { // the request
					b.Fatal(err)
				}
				_ = c.SetReadDeadline(now.Add(2 * time.Second))  // header
				_ = c.SetReadDeadline(now.Add(3 * time.Second))  // whole request
				_ = c.SetWriteDeadline(now.Add(4 * time.Second)) // write
				_ = c.SetReadDeadline(time.Time{})               // background read
				_ = c.SetReadDeadline(longAgo)                   // its abort
				_ = c.SetReadDeadline(time.Time{})
				if _, err := c.Write(req); err != nil { // the response
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkReplyInto: a reply of a status, three headers a handler names
// in lower case (not all of them common names) and a body, into a fresh
// header map, as a route serves one.
func BenchmarkReplyInto(b *testing.B) {
	reply := map[string]any{"status": 200.0, "body": "hello",
		"headers": map[string]any{"x-request-kind": "echo", "cache-control": "no-store", "x-trace": "abc"}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := replyInto(reply, nethttp.Header{}); err != nil {
			b.Fatal(err)
		}
	}
}

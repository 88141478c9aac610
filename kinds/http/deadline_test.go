package http

import (
	"errors"
	"io"
	"net"
	nethttp "net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/proctor-run/proctor/value"
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

// BenchmarkReplyIntoRecord: a Lua handler's reply as a route gets it (a
// value.Record of status, one header, body), into a fresh header map.
func BenchmarkReplyIntoRecord(b *testing.B) {
	reply := &value.Fields{{Key: "status", Value: 200.0}, {Key: "headers", Value: &value.Fields{{Key: "x-echo", Value: "yes"}}},
		{Key: "body", Value: strings.Repeat("x", 64)}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := replyInto(reply, nethttp.Header{}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestDeadlineConn: each read and write is held to the deadline last set
// before it began, and one set while a read waits cuts it at once (how
// net/http stops its background read).
func TestDeadlineConn(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	peer, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	sc, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	c := &deadlineConn{Conn: sc}
	defer c.Close()
	buf := make([]byte, 1)

	// A past deadline, set while idle: the next read fails at once.
	_ = c.SetReadDeadline(time.Unix(1, 0))
	if _, err := c.Read(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read after a past deadline: %v", err)
	}
	// Replaced before any read: the last one holds.
	_ = c.SetReadDeadline(time.Unix(1, 0))
	_ = c.SetReadDeadline(time.Time{})
	go func() { time.Sleep(50 * time.Millisecond); peer.Write([]byte("x")) }()
	if n, err := c.Read(buf); n != 1 || err != nil {
		t.Fatalf("read with no deadline: %d, %v", n, err)
	}
	// A short one set while idle cuts the read that begins later.
	_ = c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	time.Sleep(10 * time.Millisecond)
	start := time.Now()
	if _, err := c.Read(buf); !errors.Is(err, os.ErrDeadlineExceeded) || time.Since(start) > 2*time.Second {
		t.Fatalf("read past a short deadline: %v after %s", err, time.Since(start))
	}
	// Set while a read waits: it is cut at once.
	_ = c.SetReadDeadline(time.Time{})
	done := make(chan error, 1)
	go func() { _, err := c.Read(buf); done <- err }()
	time.Sleep(50 * time.Millisecond)
	_ = c.SetReadDeadline(time.Unix(1, 0))
	select {
	case err := <-done:
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("the waiting read: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a deadline set while a read waited did not cut it")
	}
	// Writes as reads.
	_ = c.SetWriteDeadline(time.Unix(1, 0))
	if _, err := c.Write([]byte("y")); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("write after a past deadline: %v", err)
	}
	_ = c.SetDeadline(time.Time{})
	if _, err := c.Write([]byte("y")); err != nil {
		t.Fatalf("write with no deadline: %v", err)
	}
	if c.NetConn() != sc {
		t.Errorf("NetConn is not the connection wrapped")
	}
}

package http_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	nethttp "net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// rawClient is one HTTP/1.1 keep-alive connection that sends the same
// request again and again, as a load generator (wrk) does: the request's
// bytes are made once (the headers net/http's client sends: Host,
// User-Agent, Content-Length, Content-Type, Accept-Encoding),  the response is read with a minimal HTTP/1.1
// parser (status line, headers, a Content-Length or chunked body), one
// goroutine per connection. net/http's Transport spends two more
// goroutines per connection (its read and write loops) and a few dozen
// allocations per request, which on the benchmark's two cores are CPU
// and scheduling the server under test does not get.
type rawClient struct {
	addr string
	req  []byte
	c    net.Conn
	br   *bufio.Reader
}

// newRawClient is a client that POSTs body to u.
func newRawClient(u string, body []byte) (*rawClient, error) {
	pu, err := url.Parse(u)
	if err != nil {
		return nil, err
	}
	req := fmt.Appendf(nil, "POST %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: proctor-bench\r\nContent-Length: %d\r\nContent-Type: text/plain\r\nAccept-Encoding: gzip\r\n\r\n",
		pu.RequestURI(), pu.Host, len(body))
	return &rawClient{addr: pu.Host, req: append(req, body...)}, nil
}

// echo sends the request and reads the response's status and body into
// buf (returned, grown as needed). A connection the server closes
// (Connection: close, or an error) is dialled again for the next request.
func (rc *rawClient) echo(buf []byte) (int, []byte, error) {
	if rc.c == nil {
		c, err := net.Dial("tcp", rc.addr)
		if err != nil {
			return 0, buf, err
		}
		rc.c, rc.br = c, bufio.NewReaderSize(c, rawClientBuffer)
	}
	status, buf, keep, err := rc.roundTrip(buf)
	if err != nil || !keep {
		rc.Close()
	}
	return status, buf, err
}

func (rc *rawClient) Close() {
	if rc.c != nil {
		rc.c.Close()
		rc.c = nil
	}
}

var errBadResponse = errors.New("malformed response")

// rawClientBuffer is the size of a client's read buffer, and so the
// longest line of a response it reads. The benchmark's responses are
// under 200 bytes; 64 clients' buffers are the benchmark's own memory,
// which on this small a heap sets how often the collector runs (see
// latencies).
const rawClientBuffer = 1024

func (rc *rawClient) roundTrip(buf []byte) (status int, body []byte, keep bool, err error) {
	body = buf[:0]
	if err := rc.c.SetDeadline(time.Now().Add(30 * time.Second)); err != nil {
		return 0, body, false, err
	}
	if _, err := rc.c.Write(rc.req); err != nil {
		return 0, body, false, err
	}
	line, err := rc.readLine()
	if err != nil {
		return 0, body, false, err
	}
	// HTTP/1.1 200 OK
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.1 ")) || len(line) > 12 && line[12] != ' ' {
		return 0, body, false, fmt.Errorf("%w: status line %q", errBadResponse, line)
	}
	status, err = strconv.Atoi(string(line[9:12]))
	if err != nil {
		return 0, body, false, fmt.Errorf("%w: status line %q", errBadResponse, line)
	}
	length, chunked, keep := -1, false, true
	for {
		line, err := rc.readLine()
		if err != nil {
			return status, body, false, err
		}
		if len(line) == 0 {
			break
		}
		name, val, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return status, body, false, fmt.Errorf("%w: header line %q", errBadResponse, line)
		}
		val = bytes.TrimSpace(val)
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			n, err := strconv.Atoi(string(val))
			if err != nil || n < 0 {
				return status, body, false, fmt.Errorf("%w: Content-Length %q", errBadResponse, val)
			}
			length = n
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			chunked = bytes.EqualFold(val, []byte("chunked"))
		case bytes.EqualFold(name, []byte("Connection")):
			keep = !bytes.EqualFold(val, []byte("close"))
		}
	}
	switch {
	case chunked:
		for {
			line, err := rc.readLine()
			if err != nil {
				return status, body, false, err
			}
			size, _, _ := bytes.Cut(line, []byte(";"))
			n, err := strconv.ParseInt(string(bytes.TrimSpace(size)), 16, 32)
			if err != nil || n < 0 {
				return status, body, false, fmt.Errorf("%w: chunk size %q", errBadResponse, line)
			}
			if n == 0 {
				for { // trailers
					line, err := rc.readLine()
					if err != nil {
						return status, body, false, err
					}
					if len(line) == 0 {
						return status, body, keep, nil
					}
				}
			}
			if body, err = readN(rc.br, body, int(n)); err != nil {
				return status, body, false, err
			}
			if line, err := rc.readLine(); err != nil || len(line) != 0 {
				return status, body, false, fmt.Errorf("%w: no CRLF after a chunk", errBadResponse)
			}
		}
	case length >= 0:
		body, err = readN(rc.br, body, length)
		return status, body, keep && err == nil, err
	}
	return status, body, false, fmt.Errorf("%w: neither Content-Length nor chunked", errBadResponse)
}

// readLine reads one CRLF-terminated line, without the CRLF; the slice
// is valid until the next read.
func (rc *rawClient) readLine() ([]byte, error) {
	line, err := rc.br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		return nil, fmt.Errorf("%w: a line longer than %d bytes", errBadResponse, rawClientBuffer)
	}
	if err != nil {
		return nil, err
	}
	if len(line) < 2 || line[len(line)-2] != '\r' {
		return nil, fmt.Errorf("%w: a line not ending in CRLF", errBadResponse)
	}
	return line[:len(line)-2], nil
}

func readN(r io.Reader, dst []byte, n int) ([]byte, error) {
	start := len(dst)
	if cap(dst)-start < n {
		dst = append(dst[:cap(dst)], make([]byte, start+n-cap(dst))...)
	}
	dst = dst[:start+n]
	_, err := io.ReadFull(r, dst[start:])
	return dst, err
}

// TestRawClient: the benchmark's client reads what a net/http server
// sends: a body with a Content-Length, a chunked one, a response that
// closes the connection (the next request dials again), and refuses a
// response that is not HTTP/1.1.
func TestRawClient(t *testing.T) {
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		body, _ := io.ReadAll(r.Body)
		switch r.URL.Path {
		case "/chunked":
			w.Write(body)
			w.(nethttp.Flusher).Flush() // no Content-Length: chunked
			w.Write(body)
		case "/close":
			w.Header().Set("Connection", "close")
			w.Write(body)
		default:
			w.Write(body)
		}
	}))
	srv.Config.ConnState = func(_ net.Conn, s nethttp.ConnState) {
		if s == nethttp.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	for _, tc := range []struct {
		path  string
		want  string
		conns int64 // connections after three requests
	}{
		{"/length", "hello", 1},
		{"/chunked", "hellohello", 1},
		{"/close", "hello", 3},
	} {
		conns.Store(0)
		rc, err := newRawClient(srv.URL+tc.path, []byte("hello"))
		if err != nil {
			t.Fatal(err)
		}
		var buf []byte
		for range 3 {
			status, body, err := rc.echo(buf)
			if err != nil || status != 200 || string(body) != tc.want {
				t.Fatalf("%s: %d %q %v, want 200 %q", tc.path, status, body, err, tc.want)
			}
			buf = body
		}
		rc.Close()
		if n := conns.Load(); n != tc.conns {
			t.Errorf("%s: %d connections, want %d", tc.path, n, tc.conns)
		}
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		c.Read(make([]byte, 1024))
		c.Write([]byte("HTTP/1.0 200 OK\r\nContent-Length: 5\r\n\r\nhello"))
	}()
	rc, err := newRawClient("http://"+ln.Addr().String()+"/", []byte("hello"))
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if _, _, err := rc.echo(nil); !errors.Is(err, errBadResponse) {
		t.Errorf("an HTTP/1.0 response: %v, want %v", err, errBadResponse)
	}
}

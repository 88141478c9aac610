package http_test

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/proctor-run/proctor/internal/testutil"
)

// A client that goes away while its request waits for the handler's reply
// is noticed at once, not at the route's timeout: the route's ask is
// abandoned and the request leaves the active ones. Both when the body was
// read to its end (net/http's background read of the connection is what
// notices) and when there was none.
func TestClientDepartureAbandonsTheAsk(t *testing.T) {
	n := start(t, strings.Replace(base, "timeout: 300ms", "timeout: 30s", 1))
	for _, tc := range []struct{ name, req string }{
		{"body", "POST /never HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello"},
		{"nobody", "GET /never HTTP/1.1\r\nHost: x\r\n\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.Dial("tcp", n.server("app:web").Addr())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Write([]byte(tc.req)); err != nil {
				t.Fatal(err)
			}
			testutil.Eventually(t, "the request waits for the reply", func() bool { return activeRequests(t, n) == 1 })
			c.Close()
			// Far within the route's 30 s timeout.
			testutil.EventuallyWithin(t, 5*time.Second, "the ask abandoned", func() bool { return activeRequests(t, n) == 0 })
		})
	}
	c := client()
	defer c.CloseIdleConnections()
	if status, _, body := get(t, c, "POST", n.url("/echo"), "still here"); status != 200 || body != "still here" {
		t.Errorf("after: %d %q", status, body)
	}
}

package cluster

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/proctor-run/proctor/internal/faultnet"
	"github.com/proctor-run/proctor/internal/testutil"
)

// Garbage anyone can send — gossip packets that fail to decrypt, TCP
// connections that fail the handshake — is logged at most a few times per
// window and remote host, then counted; the node keeps working.
//
// The window is 2 s instead of the default 10 s, so the count of the
// suppressed lines comes soon; the floods may then span more than one
// window, each allowed its burst (and its one count line).
func TestFloodsAreRateLimitedInTheLog(t *testing.T) {
	t.Parallel()
	const window = 2 * time.Second
	tc := &tcluster{t: t, faults: faultnet.New(), secret: testSecret, window: window, nodes: map[string]*tnode{}}
	t.Cleanup(tc.close)
	tc.start("n1")
	tc.start("n2")
	tc.converged(20 * time.Second)
	n1 := tc.node("n1")
	const floods = 200
	start := time.Now()

	udp, err := net.Dial("udp", n1.c.Membership().Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	junk := []byte(strings.Repeat("not a gossip packet, not encrypted ", 4))
	for range floods {
		if _, err := udp.Write(junk); err != nil {
			t.Fatal(err)
		}
	}
	for range floods {
		c, err := net.Dial("tcp", n1.c.Network().Addr())
		if err != nil {
			t.Fatal(err)
		}
		_, _ = c.Write([]byte("GET / HTTP/1.1\r\n\r\n"))
		closedByPeer(t, c)
		c.Close()
	}
	testutil.Eventually(t, "the refused connections to be logged", func() bool {
		return strings.Contains(n1.logs.String(), "transport: connection refused")
	})
	testutil.Eventually(t, "the packets to be logged", func() bool {
		return strings.Contains(n1.logs.String(), "Decrypt packet failed")
	})
	logs := n1.logs.String()
	// Five lines a window, and the line that counts the rest.
	windows := int(time.Since(start)/window) + 1
	for _, line := range []string{"Decrypt packet failed", `msg="transport: connection refused"`} {
		if n := strings.Count(logs, line); n > 6*windows {
			t.Errorf("%q logged %d times for %d attempts (%d windows of %s)", line, n, floods, windows, window)
		}
	}
	testutil.EventuallyWithin(t, 30*time.Second, "the suppressed lines to be counted", func() bool {
		return strings.Contains(n1.logs.String(), "transport: connection refused (similar lines suppressed)")
	})
	tc.converged(20 * time.Second)
}

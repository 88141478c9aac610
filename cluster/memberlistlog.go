package cluster

import (
	"context"
	"log/slog"
	"net"
	"strings"

	"github.com/proctor-run/proctor/internal/logging"
)

// memberlistLog turns memberlist's log lines ("[WARN] memberlist: …")
// into slog records. Its warnings are the ordinary events of failure
// detection, so they are logged at Info; its errors at Warn; the rest at
// Debug. Lines above Debug are rate-limited per remote host and kind of
// line: packets that fail to decrypt, or carry a wrong label, are
// anyone's to send.
//
// Once the node leaves (quit closed), a send on the sockets its own leave
// closed is no news: "use of closed network connection" goes to Debug.
type memberlistLog struct {
	log   *slog.Logger
	limit *logging.Limiter
	quit  <-chan struct{}
}

func (w memberlistLog) Write(p []byte) (int, error) {
	s := strings.TrimSpace(string(p))
	level := slog.LevelDebug
	for prefix, l := range map[string]slog.Level{"[ERR]": slog.LevelWarn, "[WARN]": slog.LevelInfo} {
		if strings.HasPrefix(s, prefix) {
			level = l
		}
	}
	if w.leaving() && strings.Contains(s, "use of closed network connection") {
		level = slog.LevelDebug
	}
	if i := strings.Index(s, "] "); i >= 0 && strings.HasPrefix(s, "[") {
		s = s[i+2:]
	}
	if !strings.HasPrefix(s, "memberlist:") {
		s = "memberlist: " + s
	}
	// "Refuting an alive message for 'n1' (addr) meta:([1 1 2 …] VS […]),
	// vsn:(…)": the byte dumps say nothing to a reader.
	if i := strings.Index(s, " meta:(["); i >= 0 {
		s = s[:i]
	}
	if level == slog.LevelDebug || w.limit == nil {
		w.log.Log(context.Background(), level, s)
		return len(p), nil
	}
	w.limit.Log(w.log, level, "source", memberlistLogKey(s), s)
	return len(p), nil
}

// memberlistLogKey is the rate-limiting key of a memberlist line: the host
// it names (from=host:port) and what it says, up to its first detail.
func memberlistLogKey(s string) string {
	host := ""
	if i := strings.Index(s, "from="); i >= 0 {
		addr, _, _ := strings.Cut(s[i+len("from="):], " ")
		if h, _, err := net.SplitHostPort(addr); err == nil {
			host = h
		} else {
			host = addr
		}
	}
	what := strings.TrimPrefix(s, "memberlist: ")
	if i := strings.IndexAny(what, ":\"'("); i >= 0 {
		what = what[:i]
	}
	if len(what) > 48 {
		what = what[:48]
	}
	return host + " " + strings.TrimSpace(what)
}

func (w memberlistLog) leaving() bool {
	select {
	case <-w.quit:
		return true
	default:
		return false
	}
}

package http

import (
	nethttp "net/http"

	"github.com/proctor-run/proctor/value"
)

// MaxReplyHeaderBytes bounds the headers of a reply, counted as they are
// sent (each value's name, ": ", the value and CRLF). Clients refuse far
// less than a handler could set (curl a header line over 100 KB, Go's
// client headers over 10 MB, a proxy's buffer often 4–8 KB): a larger set
// is the handler's error, a 500, not a response the client chokes on.
const MaxReplyHeaderBytes = 64 << 10

// checkHeaderBytes fails when h is larger than MaxReplyHeaderBytes,
// naming its largest header (the name clipped, no value shown: the
// process's data is not echoed).
func checkHeaderBytes(h nethttp.Header) error {
	total, largest, largestN := 0, "", 0
	for name, vs := range h {
		n := 0
		for _, v := range vs {
			n += len(name) + len(v) + 4
		}
		total += n
		if n > largestN {
			largest, largestN = name, n
		}
	}
	if total <= MaxReplyHeaderBytes {
		return nil
	}
	return value.NewError(value.KindInternal, "the handler's reply headers are %d bytes, more than %d; the largest is %s (%d bytes)",
		total, MaxReplyHeaderBytes, clipName(largest), largestN)
}

// clipName shows at most 64 bytes of a header name.
func clipName(name string) string {
	if len(name) <= 64 {
		return name
	}
	return clip(name, 64) + "…"
}

package http

import (
	"errors"
	nethttp "net/http"

	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/value"
)

// A handler that ends with a request unanswered is answered by how it
// ended, the exit reason the ask was settled with (process.ErrExited's
// Cause):
//
//   - stopped from outside — shut down (a supervisor, a reload, an
//     operator's terminate) or killed — it is a target that is stopping:
//     503 stopped, which a client may retry once it is back;
//   - its node went away: 503 noconnection;
//   - anything else is the handler's own failure: a script error, a
//     raised error value of whatever kind, `return nil, err` from main,
//     and a normal exit (main returned) with the request unanswered. As
//     in OTP, where a gen_server:call to a process that exits, normally or
//     not, without replying fails in the caller, and in Akka, where an ask
//     to an actor that stops fails: the request failed, a 500 internal.
//     A 503 would tell clients and load balancers to retry a request that
//     crashes its handler every time.
//
// The message is fixed: why it died (a traceback, the script's file and
// line, its data) is for the log only.
func exitedResponse(err error) (*Response, string) {
	var reason *value.Error
	var ve *value.Error
	if errors.As(err, &ve) {
		reason = ve.Cause
	}
	switch {
	case reason != nil && (errors.Is(reason, process.ErrShutdown) || errors.Is(reason, process.ErrKilled)):
		return errorResponse(nethttp.StatusServiceUnavailable,
			value.NewError(value.KindStopped, "the handler was stopped before it replied")), "stopped"
	case reason != nil && reason.Kind == value.KindNoConnection:
		return errorResponse(nethttp.StatusServiceUnavailable,
			value.NewError(value.KindNoConnection, "the handler's node went away before it replied")), "noconnection"
	case reason == nil:
		return errorResponse(nethttp.StatusInternalServerError,
			value.NewError(value.KindInternal, "the handler exited without replying")), "exited normally"
	}
	return errorResponse(nethttp.StatusInternalServerError,
		value.NewError(value.KindInternal, "the handler failed before it replied")), "failed"
}

package http

import (
	"strings"
	"testing"

	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/value"
)

// exitedResponse maps how the handler ended: stopped from outside or its
// node gone is 503, anything else (its own failure, a normal exit) 500,
// and the message never carries the exit reason's text.
func TestExitedResponse(t *testing.T) {
	exited := func(cause *value.Error) error {
		return &value.Error{Kind: value.KindStopped, Code: process.ErrExited.Code, Cause: cause, Message: "<t.1.1> exited before it replied: secret"}
	}
	cases := []struct {
		name   string
		err    error
		status int
		kind   value.Kind
	}{
		{"shutdown", exited(value.FromError(process.ErrShutdown)), 503, value.KindStopped},
		{"killed", exited(value.FromError(process.ErrKilled)), 503, value.KindStopped},
		{"noconnection", exited(value.FromError(process.ErrNoConnection)), 503, value.KindNoConnection},
		{"normal", exited(nil), 500, value.KindInternal},
		{"script error", exited(value.NewError(value.KindInternal, "echo.lua:3: secret")), 500, value.KindInternal},
		{"raised stopped", exited(value.NewError(value.KindStopped, "secret")), 500, value.KindInternal},
		{"raised not_found", exited(value.NewError(value.KindNotFound, "secret")), 500, value.KindInternal},
	}
	for _, tc := range cases {
		resp, _ := exitedResponse(tc.err)
		if resp.Status != tc.status || !strings.Contains(resp.Body, `"kind":"`+string(tc.kind)+`"`) || strings.Contains(resp.Body, "secret") {
			t.Errorf("%s: %d %s, want %d %s", tc.name, resp.Status, resp.Body, tc.status, tc.kind)
		}
	}
}

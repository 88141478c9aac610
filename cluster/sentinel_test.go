package cluster

import (
	"errors"
	"fmt"
	"testing"

	"github.com/proctor-run/proctor/value"
)

// TestSentinelsHaveKindsAndCodes: the errors callers of the cluster branch
// on are value.Sentinel's (issue 24), so wrapped with context they keep a
// kind (a script or an HTTP client sees `limit: frame too large`, not
// `internal: …`) and a code that still matches after the error crossed the
// wire as a value.Error. They were errors.New, of kind internal and no code.
func TestSentinelsHaveKindsAndCodes(t *testing.T) {
	for _, tc := range []struct {
		err  error
		code string
		kind value.Kind
	}{
		{ErrInsecure, "cluster.insecure", value.KindInvalid},
		{ErrNameTaken, "cluster.name_taken", value.KindInvalid},
		{ErrFrameTooLarge, "cluster.frame_too_large", value.KindLimit},
		{ErrGossipTooLarge, "cluster.gossip_too_large", value.KindLimit},
		{ErrKindTaken, "cluster.gossip_kind_taken", value.KindInvalid},
		{ErrGossipQueueFull, "cluster.gossip_queue_full", value.KindLimit},
		{ErrHandshake, "cluster.handshake", value.KindNoConnection},
		{ErrAuth, "cluster.auth", value.KindNoConnection},
		{ErrIncompatible, "cluster.incompatible", value.KindNoConnection},
		{ErrTLS, "cluster.tls", value.KindNoConnection},
	} {
		wrapped := fmt.Errorf("peer n2: %w", tc.err)
		if k := value.KindOf(wrapped); k != tc.kind {
			t.Errorf("%v: kind %s, want %s", tc.err, k, tc.kind)
		}
		if s, ok := value.LookupCode(tc.code); !ok || s != tc.err {
			t.Errorf("%v: code %q not registered for it", tc.err, tc.code)
		}
		// As a value.Error decoded on another node: a copy, context added.
		copied := &value.Error{Kind: tc.kind, Code: tc.code, Message: wrapped.Error()}
		if !errors.Is(copied, tc.err) || !errors.Is(value.FromError(wrapped), tc.err) {
			t.Errorf("%v: a copy no longer matches", tc.err)
		}
	}
}

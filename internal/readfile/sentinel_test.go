package readfile

import (
	"errors"
	"fmt"
	"syscall"
	"testing"

	"github.com/proctor-run/proctor/value"
)

// TestSentinelsHaveKindsAndCodes: readfile's sentinels are value.Sentinel's
// (issue 24), so a configuration error that holds one has a kind; a read
// past its deadline still matches ETIMEDOUT, which reloads retry on.
func TestSentinelsHaveKindsAndCodes(t *testing.T) {
	for _, tc := range []struct {
		err  error
		code string
		kind value.Kind
	}{
		{ErrNotRegular, "readfile.not_regular", value.KindInvalid},
		{ErrTooLarge, "readfile.too_large", value.KindLimit},
		{ErrKernelFile, "readfile.kernel_file", value.KindInvalid},
		{ErrReadTimeout, "readfile.read_timeout", value.KindTimeout},
	} {
		wrapped := fmt.Errorf("a.yaml: %w", &Error{Err: tc.err, What: "x"})
		if k := value.KindOf(wrapped); k != tc.kind {
			t.Errorf("%v: kind %s, want %s", tc.err, k, tc.kind)
		}
		if s, ok := value.LookupCode(tc.code); !ok || s != tc.err || !errors.Is(wrapped, tc.err) {
			t.Errorf("%v: code %q not registered for it, or no match", tc.err, tc.code)
		}
		if timeout := errors.Is(wrapped, syscall.ETIMEDOUT); timeout != (tc.err == ErrReadTimeout) {
			t.Errorf("%v: matches ETIMEDOUT: %v", tc.err, timeout)
		}
	}
}

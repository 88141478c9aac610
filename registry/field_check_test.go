package registry

import (
	"math"
	"testing"
	"time"
)

// TestFieldCheck: the limits a declaration states are checked by one
// method, for a value read from a file and one built in Go.
func TestFieldCheck(t *testing.T) {
	count := IntField("n", 0, 10, "A count.").AtLeast(1, "")
	unlimited := IntField("max", 0, 10, "A limit.").AtLeast(0, "unlimited")
	below := IntField("size", 0, 10, "A size.").AtLeast(0, "").Below("must be >= 0, got %d")
	share := FloatField("share", 0.5, "A share.").Between(0, 1)
	rate := FloatField("rate", 0.5, "A rate.").AtLeast(0, "")
	positive := DurationField("every", time.Second, "A period.").Positive()
	capped := DurationField("wait", time.Second, "A wait.").NonNegative("disabled").AtMost(time.Minute)
	mode := EnumField("mode", "fast", []string{"fast", "slow"}, "A mode.")
	for _, tc := range []struct {
		f    *Field
		v    any
		want string
	}{
		{count, 1, ""},
		{count, 0, "must be at least 1, got 0"},
		{count, 1000, ""}, // the upper bound is the reader's (Limits may override it)
		{unlimited, -1, "must be 0 (unlimited) or more, got -1"},
		{below, -2, "must be >= 0, got -2"},
		{share, 1.0, ""},
		{share, 1.5, "must be between 0 and 1, got 1.5"},
		{share, math.NaN(), "must be between 0 and 1, got NaN"},
		{rate, -0.1, "must be >= 0, got -0.1"},
		{rate, math.NaN(), "must be >= 0, got NaN"},
		{positive, time.Duration(0), "must be a positive duration, got 0s"},
		{positive, time.Millisecond, ""},
		{capped, time.Duration(0), ""},
		{capped, -time.Second, "must be 0 (disabled) or a positive duration, got -1s"},
		{capped, time.Hour, "must be at most 1m0s, got 1h0m0s"},
		{mode, "slow", ""},
		{mode, "slwo", `unknown value "slwo" (did you mean "slow"?); one of fast, slow`},
	} {
		if got := tc.f.Check(tc.v); got != tc.want {
			t.Errorf("%s.Check(%v) = %q, want %q", tc.f.Name, tc.v, got, tc.want)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("Check of a value of no field type did not panic")
		}
	}()
	count.Check(int64(1))
}

package suggest

import (
	"testing"
)

func TestSuggest(t *testing.T) {
	strategies := []string{"round_robin", "random", "smallest_mailbox", "broadcast", "consistent_hash", "scatter_gather_first_completed", "tail_chopping"}
	for _, c := range []struct {
		in, want string
	}{
		{"round_robbin", "round_robin"},                      // a typo
		{"scatter_gather", "scatter_gather_first_completed"}, // cut short at a word
		{"tail", "tail_chopping"},                            // cut short, one candidate
		{"scatter_gath", ""},                                 // not at a word boundary
		{"ro", ""},                                           // too short to tell
		{"elastic", ""},                                      // nothing near
	} {
		if got := Closest(c.in, strategies); got != c.want {
			t.Errorf("Closest(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	// Two candidates start with it: no guess.
	if got := Closest("max", []string{"max_restarts", "max_delay"}); got != "" {
		t.Errorf("Closest(max) = %q between two candidates", got)
	}
}

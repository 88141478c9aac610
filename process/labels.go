package process

import (
	"fmt"

	"github.com/proctor-run/proctor/value"
)

// A topic is a label, not a payload, and so is a name: the runtime copies
// both into dead letters, logs, errors and views, and a script that sent
// 64 MiB topics to a dead PID filled the dead-letter ring with gigabytes.
// Both are bounded where a message is sent, a name registered or a
// destination resolved.
const (
	// MaxTopicSize is the longest topic a message may have: 1024 bytes.
	MaxTopicSize = 1024
	// MaxNameSize is the longest registered name, and the longest
	// destination (a name, or name@node): 512 bytes.
	MaxNameSize = 512
)

// ErrTooLong: a topic or a name is longer than MaxTopicSize or
// MaxNameSize.
var ErrTooLong = value.Sentinel("process.too_long", value.KindLimit, "too long")

// CheckTopic returns ErrTooLong, saying how long topic is, when it passes
// MaxTopicSize. verb names the operation in the error.
func CheckTopic(verb, topic string) error {
	if len(topic) <= MaxTopicSize {
		return nil
	}
	return fmt.Errorf("%s: %w: a topic of %d bytes (a topic is a label: at most %d)", verb, ErrTooLong, len(topic), MaxTopicSize)
}

// CheckName returns ErrTooLong, saying how long name is, when it passes
// MaxNameSize. verb names the operation in the error.
func CheckName(verb, name string) error {
	if len(name) <= MaxNameSize {
		return nil
	}
	return fmt.Errorf("%s: %w: a name of %d bytes (at most %d)", verb, ErrTooLong, len(name), MaxNameSize)
}

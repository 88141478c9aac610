package process

import (
	"errors"
	"testing"
)

// TestSendNameErrorsNameWhatWasAddressed: a send by name that fails says
// the name the sender used — not a PID it was resolved to, nor the node's
// name appended to a local name — and the dead letter is addressed to it.
func TestSendNameErrorsNameWhatWasAddressed(t *testing.T) {
	n, box := newLetterNode()
	full := parked(t, n, SpawnOptions{MailboxSize: 1})
	if err := n.Register("app:store", full); err != nil {
		t.Fatal(err)
	}
	if err := n.Send(full, Message{Topic: "fill"}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, want string
		cause      error
	}{
		{"app:store", "send to app:store: mailbox full", ErrMailboxFull},
		{"app:nobody", "send to app:nobody: no process registered under that name", ErrNameNotFound},
	}
	for _, tt := range tests {
		err := n.SendName("test", tt.name, Message{Topic: "put"})
		if err == nil || err.Error() != tt.want || !errors.Is(err, tt.cause) {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
		}
		if got := box.take(); len(got) != 1 || got[0].To != tt.name {
			t.Errorf("%s: dead letters %+v", tt.name, got)
		}
	}
}

package pgdist

import "github.com/proctor-run/proctor/process"

// A node that joins a cluster, or whose scope is restarting, receives pg
// messages for a scope whose name is not registered yet: the peers learn
// about it from the membership before the scope runs, and probe it (a
// hello), or send it their state. The hello's asker is told the name is
// not found and waits for the scope's start notice; a state sent too early
// is sent again once the scope discovers its peers. Such messages are
// part of the protocol, not messages lost: they must not raise dead
// letters on every node that joins. So are those that reach a scope that
// has just stopped (its node leaving, or the scope restarting): a peer
// sends them before the monitor of that scope tells it, and stops sending
// once it does.

// QuietDeadLetters returns sink without the pg protocol's messages to a
// scope that does not run on this node (reason name_not_found or
// no_process, a pg.* topic): the sender learns of it through the protocol
// (the name's absence, the scope's monitor). Every other dead
// letter reaches sink. A nil sink stays nil.
func QuietDeadLetters(sink process.DeadLetterSink) process.DeadLetterSink {
	if sink == nil {
		return nil
	}
	return quietSink{sink}
}

type quietSink struct{ process.DeadLetterSink }

func (q quietSink) DeadLetter(d process.DeadLetter) {
	if (d.Reason == process.DeadNameNotFound || d.Reason == process.DeadNoProcess) && isProtocolTopic(d.Topic) {
		return
	}
	q.DeadLetterSink.DeadLetter(d)
}

func isProtocolTopic(t string) bool {
	switch t {
	case topicHello, topicDiscover, topicSync, topicOps:
		return true
	}
	return false
}

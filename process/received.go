package process

// Received is a message in the form its receiver's mailbox held it: the
// payload and a pointer to the immutable record of its topic, sender and
// reply target, 24 bytes where a Message is 72. A receiver that keeps
// many messages, or makes a handle for each (the Lua host), keeps them in
// this form (Proc.TryReceived) and opens one when it needs the Message.
type Received struct {
	// Payload is the sender's value; a receiver may replace it with its
	// own form of the value (the Lua host, once it has converted it).
	// Message carries whatever it holds.
	Payload any
	meta    *meta // nil for a tell with no topic and no sender
}

// TryReceived is TryReceive returning the message as Received.
func (h *Proc) TryReceived() (Received, bool) {
	e, ok := h.p.pop()
	return Received{Payload: e.payload, meta: e.meta}, ok
}

// Topic returns the message's topic.
func (r *Received) Topic() string {
	if r.meta == nil {
		return ""
	}
	return r.meta.topic
}

// From returns the sender's PID, the zero PID when the sender is not a
// process.
func (r *Received) From() PID {
	if r.meta == nil {
		return PID{}
	}
	return r.meta.from
}

// CanReply reports whether the message has a reply target (see
// Message.CanReply).
func (r *Received) CanReply() bool { return r.meta != nil && r.meta.target != nil }

// Message opens r: the Message it was sent as, with the current Payload.
func (r *Received) Message() Message {
	e := envelope{meta: r.meta, payload: r.Payload}
	return e.open()
}

package wire

import (
	"encoding/binary"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/value"
)

// Version is the envelope format this package writes and reads. A change
// to the format, or to the value codec inside it, takes a new version.
const Version byte = 3

// Signal tells what an envelope carries.
type Signal uint8

// The signals. The numbers are part of the wire format.
const (
	// Send: a message From (zero or a process of the sender) To a
	// process, with Topic and Payload; an ask has a Token and a TTL. A
	// message to a registered name has the Name, and To names only the
	// node.
	Send Signal = iota + 1
	// Reply: the answer to the ask of Token, From the process that
	// replied; Payload is the value, Err the rejection.
	Reply
	// Exit: a stop request To a process, on behalf of From (may be zero);
	// Err is the reason.
	Exit
	// Kill: end To at once, on behalf of From (may be zero).
	Kill
	// Link: From linked itself to To.
	Link
	// Unlink: From removed its link with To.
	Unlink
	// LinkExit: From, linked to To, exited; Payload is its value, Err its
	// reason (nil for a normal exit).
	LinkExit
	// Monitor: From monitors To.
	Monitor
	// Demonitor: From no longer monitors To.
	Demonitor
	// MonitorExit: From, monitored by To, exited; Payload and Err as for
	// LinkExit.
	MonitorExit
	// Whereis: which process is registered as Name on To's node (To
	// names only the node)? An ask: it has a Token and a TTL, and is
	// answered with a Reply whose From is the process (Err
	// process.ErrNameNotFound when there is none). Since version 2.
	Whereis

	lastSignal = Whereis
)

var signalNames = [...]string{
	Send: "send", Reply: "reply", Exit: "exit", Kill: "kill", Link: "link", Unlink: "unlink",
	LinkExit: "link_exit", Monitor: "monitor", Demonitor: "demonitor", MonitorExit: "monitor_exit",
	Whereis: "whereis",
}

func (s Signal) String() string {
	if s >= Send && s <= lastSignal {
		return signalNames[s]
	}
	return fmt.Sprintf("signal(%d)", uint8(s))
}

// Flags of the optional fields.
const (
	FlagTopic byte = 1 << iota
	FlagToken
	FlagTTL
	FlagPayload
	FlagErr
	FlagName
	// FlagRelayed marks a Send whose From is a process of another node
	// than the sender's: a message handed on (a router forwarding what a
	// process of another node sent it). Only a Send with a From carries
	// it; it adds no bytes. Since version 3.
	FlagRelayed

	knownFlags = FlagTopic | FlagToken | FlagTTL | FlagPayload | FlagErr | FlagName | FlagRelayed
)

// Envelope is one signal between two nodes. Fields a signal does not use
// are zero.
type Envelope struct {
	Signal Signal
	From   process.PID
	To     process.PID
	Topic  string
	// Name is the registered name a Send is addressed to, resolved on the
	// receiving node; To then names only the node (its ID is 0).
	Name string
	// Token names the pending ask on the asker's node: set on the Send of
	// an ask and on its Reply.
	Token uint64
	// TTL is how long the asker still waits, as of encoding; 0 for none.
	TTL time.Duration
	// Payload is a value of the value model.
	Payload any
	// Err is the error the signal carries. After Decode it is a
	// *value.Error (or nil).
	Err error
	// Relayed: a Send handed on by the sending node on behalf of From, a
	// process of another node (FlagRelayed).
	Relayed bool
}

// Bytes is a payload that crosses as a string of the value model, written
// from the bytes as they are: a protocol that encodes its own messages
// (pg's) hands its buffer to the envelope without making a string of it
// first. The receiver decodes a string, as for any string payload: the
// format is the same. Encode copies the bytes into the frame.
//
// A *Bytes is the same payload without a slice header boxed per message:
// a sender that encodes every message into one buffer of its own passes
// a pointer to it, and reuses the buffer once the send has returned (the
// transport has encoded the envelope, and copied the bytes, by then).
type Bytes []byte

// PayloadBytes returns the bytes of a Bytes or *Bytes payload; false for
// any other payload.
func PayloadBytes(payload any) ([]byte, bool) {
	switch b := payload.(type) {
	case Bytes:
		return b, true
	case *Bytes:
		if b != nil {
			return *b, true
		}
	}
	return nil, false
}

// Errors of the codec.
var (
	// ErrMalformed: a frame that is not a well-formed envelope.
	ErrMalformed = value.Sentinel("wire.malformed", value.KindInvalid, "malformed envelope")
	// ErrVersion: an envelope of a version this node does not speak.
	ErrVersion = value.Sentinel("wire.version", value.KindInvalid, "unsupported envelope version")
)

// Encode appends the wire form of e to buf. A payload that is not a value
// of the value model is an invalid error naming it; buf is then returned
// unchanged.
func Encode(buf []byte, e *Envelope) ([]byte, error) {
	return EncodeLimit(buf, e, math.MaxInt)
}

// EncodeLimit is Encode with a budget: an envelope whose wire form would
// take more than limit bytes is an error wrapping value.ErrTooLarge (of
// kind limit), found as the encoder passes the limit, not after it has
// built the whole envelope. buf is then returned unchanged.
func EncodeLimit(buf []byte, e *Envelope, limit int) ([]byte, error) {
	start := len(buf)
	if limit < math.MaxInt-start {
		limit += start
	}
	if len(e.Topic)+len(e.Name) > limit-start {
		return buf, fmt.Errorf("%s: %w: topic and name alone take more than %d bytes", e.describe(), value.ErrTooLarge, limit-start)
	}
	var flags byte
	if e.Topic != "" {
		flags |= FlagTopic
	}
	if e.Name != "" {
		flags |= FlagName
	}
	if e.Token != 0 {
		flags |= FlagToken
	}
	if e.TTL > 0 {
		flags |= FlagTTL
	}
	if e.Payload != nil {
		flags |= FlagPayload
	}
	if e.Relayed {
		flags |= FlagRelayed
	}
	var ve *value.Error
	if e.Err != nil {
		if ve = value.FromError(e.Err); ve != nil {
			flags |= FlagErr
		}
	}
	buf = append(buf, Version, byte(e.Signal), flags)
	buf = appendPID(buf, e.From)
	buf = appendPID(buf, e.To)
	if flags&FlagTopic != 0 {
		buf = appendString(buf, e.Topic)
	}
	if flags&FlagName != 0 {
		buf = appendString(buf, e.Name)
	}
	if flags&FlagToken != 0 {
		buf = binary.AppendUvarint(buf, e.Token)
	}
	if flags&FlagTTL != 0 {
		buf = binary.AppendUvarint(buf, uint64(e.TTL))
	}
	if len(buf) > limit {
		return buf[:start], fmt.Errorf("%s: %w: more than %d bytes", e.describe(), value.ErrTooLarge, limit-start)
	}
	var err error
	if b, ok := PayloadBytes(e.Payload); ok {
		if len(b)+1+binary.MaxVarintLen64 > limit-len(buf) {
			return buf[:start], fmt.Errorf("%s: payload: %w: %d bytes (at most %d)", e.describe(), value.ErrTooLarge, len(b), limit-start)
		}
		buf = value.AppendStringBytes(buf, b)
	} else if flags&FlagPayload != 0 {
		if buf, err = value.EncodeLimit(buf, e.Payload, limit); err != nil {
			return buf[:start], fmt.Errorf("%s: payload: %w", e.describe(), err)
		}
	}
	if flags&FlagErr != 0 {
		if buf, err = value.EncodeLimit(buf, ve, limit); err != nil {
			return buf[:start], fmt.Errorf("%s: error: %w", e.describe(), err)
		}
	}
	return buf, nil
}

// describe names the envelope as its sender addressed it: "send to
// app:svc@n2" for a send to a registered name (whose To names only the
// node), "exit to <n2.7.1>" otherwise.
func (e *Envelope) describe() string {
	if e.Name != "" {
		return fmt.Sprintf("%s to %s@%s", e.Signal, e.Name, e.To.Node)
	}
	return fmt.Sprintf("%s to %s", e.Signal, e.To)
}

func appendString(buf []byte, s string) []byte {
	buf = binary.AppendUvarint(buf, uint64(len(s)))
	return append(buf, s...)
}

func appendPID(buf []byte, p process.PID) []byte {
	buf = appendString(buf, p.Node)
	buf = binary.AppendUvarint(buf, p.ID)
	return binary.AppendUvarint(buf, uint64(p.Creation))
}

// Decode reads the envelope that is the whole of b. It never retains b.
// Anything but exactly one well-formed envelope of this version is an
// error: ErrVersion or ErrMalformed, wrapped with what was wrong.
func Decode(b []byte) (Envelope, error) {
	var e Envelope
	if len(b) < 3 {
		return e, fmt.Errorf("%w: %d bytes", ErrMalformed, len(b))
	}
	if b[0] != Version {
		return e, fmt.Errorf("%w: version %d (this node speaks %d)", ErrVersion, b[0], Version)
	}
	e.Signal = Signal(b[1])
	if e.Signal < Send || e.Signal > lastSignal {
		return e, fmt.Errorf("%w: unknown signal %d", ErrMalformed, b[1])
	}
	flags := b[2]
	if flags&^knownFlags != 0 {
		return e, fmt.Errorf("%w: unknown flags %#x", ErrMalformed, flags&^knownFlags)
	}
	d := decoder{b: b[3:]}
	e.From = d.pid("from")
	e.To = d.pid("to")
	if flags&FlagTopic != 0 {
		e.Topic = d.label("topic")
	}
	if flags&FlagName != 0 {
		if e.Name = d.label("name"); d.err == nil && (e.Name == "" || (e.Signal != Send && e.Signal != Whereis) || e.To.ID != 0) {
			d.fail("a name only addresses a send or a whereis to a node")
		}
	}
	if flags&FlagToken != 0 {
		if e.Token = d.uvarint("token"); e.Token == 0 && d.err == nil {
			d.fail("zero token")
		}
	}
	if flags&FlagTTL != 0 {
		ttl := d.uvarint("ttl")
		if (ttl == 0 || ttl > 1<<62) && d.err == nil {
			d.fail("ttl out of range")
		}
		e.TTL = time.Duration(ttl)
	}
	if flags&FlagPayload != 0 && d.err == nil {
		v, rest, err := value.Decode(d.b)
		if err != nil {
			return Envelope{}, fmt.Errorf("%w: payload: %w", ErrMalformed, err)
		}
		e.Payload, d.b = v, rest
	}
	if flags&FlagErr != 0 && d.err == nil {
		v, rest, err := value.Decode(d.b)
		if err != nil {
			return Envelope{}, fmt.Errorf("%w: error: %w", ErrMalformed, err)
		}
		ve, ok := v.(*value.Error)
		if !ok {
			d.fail("error field is not an error")
		} else {
			e.Err, d.b = ve, rest
		}
	}
	if e.Signal == Whereis && d.err == nil && (e.Name == "" || e.Token == 0) {
		d.fail("a whereis without a name or a token")
	}
	if flags&FlagRelayed != 0 && d.err == nil {
		if e.Signal != Send || e.From.IsZero() {
			d.fail("only a send from a process is relayed")
		}
		e.Relayed = true
	}
	if d.err == nil && len(d.b) != 0 {
		d.fail(fmt.Sprintf("%d trailing bytes", len(d.b)))
	}
	if d.err != nil {
		return Envelope{}, d.err
	}
	return e, nil
}

// decoder reads fields in order; the first failure sticks, and later
// reads return zero values.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s", ErrMalformed, what)
	}
}

func (d *decoder) uvarint(field string) uint64 {
	if d.err != nil {
		return 0
	}
	n, k := binary.Uvarint(d.b)
	if k <= 0 {
		d.fail(field + ": truncated")
		return 0
	}
	d.b = d.b[k:]
	return n
}

// label reads a topic or a registered name: a few of them carry nearly
// all the traffic, so the recent ones are reused (labelCache) instead of
// allocated for every frame.
func (d *decoder) label(field string) string { return labels.get(d.bytes(field)) }

// node reads a node name. Every PID of a node carries its name, so names
// are interned: decoding a PID allocates nothing once its node is known.
func (d *decoder) node(field string) string { return nodeNames.intern(d.bytes(field)) }

// bytes reads a length-prefixed field; it aliases the frame.
func (d *decoder) bytes(field string) []byte {
	n := d.uvarint(field)
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.fail(field + ": truncated")
		return nil
	}
	b := d.b[:n]
	d.b = d.b[n:]
	return b
}

// nodeNames interns node names: a copy-on-write map read without locking.
// It holds at most maxInterned names of at most maxInternedLen bytes;
// others are allocated as any string is (a peer can send names of nodes
// that do not exist).
var nodeNames internTable

const (
	maxInterned    = 4096
	maxInternedLen = 255
)

type internTable struct {
	m  atomic.Pointer[map[string]string]
	mu sync.Mutex
}

func (t *internTable) intern(b []byte) string {
	if m := t.m.Load(); m != nil {
		if s, ok := (*m)[string(b)]; ok {
			return s
		}
	}
	s := string(b)
	if len(b) > maxInternedLen {
		return s
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	old := t.m.Load()
	if old != nil && len(*old) >= maxInterned {
		return s
	}
	next := make(map[string]string, 1)
	if old != nil {
		next = make(map[string]string, len(*old)+1)
		for k, v := range *old {
			next[k] = v
		}
	}
	next[s] = s
	t.m.Store(&next)
	return s
}

// labels caches the topics and names of recent frames.
var labels labelCache

// labelCache is a direct-mapped cache of short strings: a slot per hash,
// holding the last string that hashed there, read and replaced without
// locking. It is bounded (labelSlots strings of at most labelMaxLen
// bytes) whatever a peer sends: a string it does not hold is allocated,
// as any string is, and replaces the slot's.
type labelCache struct {
	slots [labelSlots]atomic.Pointer[string]
}

const (
	labelSlots  = 256
	labelMaxLen = 64
)

func (c *labelCache) get(b []byte) string {
	if len(b) == 0 || len(b) > labelMaxLen {
		return string(b)
	}
	// FNV-1a: the labels are short, a call to a general hash costs more.
	h := uint32(2166136261)
	for _, x := range b {
		h = (h ^ uint32(x)) * 16777619
	}
	slot := &c.slots[h%labelSlots]
	if p := slot.Load(); p != nil && *p == string(b) {
		return *p
	}
	s := string(b)
	slot.Store(&s)
	return s
}

func (d *decoder) pid(field string) process.PID {
	node := d.node(field)
	id := d.uvarint(field)
	cr := d.uvarint(field)
	if d.err != nil {
		return process.PID{}
	}
	if cr > 1<<32-1 {
		d.fail(field + ": creation out of range")
		return process.PID{}
	}
	// A node alone (id 0, creation 0) addresses a registered name.
	if (node == "" && (id != 0 || cr != 0)) || (id == 0 && cr != 0) {
		d.fail(field + ": half a pid")
		return process.PID{}
	}
	return process.PID{Node: node, ID: id, Creation: uint32(cr)}
}

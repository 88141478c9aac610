package wire

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"
	"unsafe"

	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/value"
)

var (
	p1 = process.PID{Node: "n1", ID: 7, Creation: 1<<32 - 1}
	p2 = process.PID{Node: "node-two", ID: 1 << 60, Creation: 3}
)

func samples() []Envelope {
	return []Envelope{
		{Signal: Send, From: p1, To: p2, Topic: "put", Payload: map[string]any{"k": []any{1.0, "v"}}},
		{Signal: Send, To: p2},
		{Signal: Send, From: p1, To: process.PID{Node: "n2"}, Name: "app:svc", Topic: "t", Token: 3, TTL: time.Second},
		{Signal: Send, From: p1, To: p2, Topic: "get", Token: 1 << 40, TTL: 1500 * time.Millisecond, Payload: "x"},
		{Signal: Reply, From: p2, Token: 9, Payload: 42.0},
		{Signal: Reply, Token: 9, Err: process.ErrNoProcess},
		{Signal: Reply, From: p2, Token: 1, Err: value.Aggregate("all 2 routees failed", []*value.Error{
			value.FromError(fmt.Errorf("ask: %w", process.ErrTimeout)), value.NewError(value.KindInvalid, "bad"),
		})},
		{Signal: Exit, From: p1, To: p2, Err: process.ErrShutdown},
		{Signal: Exit, To: p2, Err: value.NewError(value.KindLimit, "too big")},
		{Signal: Kill, To: p2},
		{Signal: Link, From: p1, To: p2},
		{Signal: Unlink, From: p1, To: p2},
		{Signal: LinkExit, From: p1, To: p2, Payload: "bye", Err: fmt.Errorf("crashed: %w", process.ErrKilled)},
		{Signal: LinkExit, From: p1, To: p2},
		{Signal: Monitor, From: p1, To: p2},
		{Signal: Demonitor, From: p1, To: p2},
		{Signal: MonitorExit, From: p2, To: p1, Err: process.ErrNoConnection},
		{Signal: Whereis, To: process.PID{Node: "n2"}, Name: "app:svc", Token: 4, TTL: time.Second},
		{Signal: Whereis, From: p1, To: process.PID{Node: "n2"}, Name: "svc", Token: 5, TTL: time.Second},
		{Signal: Send, From: p1, To: p2, Topic: "routed", Token: 6, TTL: time.Second, Relayed: true},
	}
}

// normal is what Decode gives back for e: errors become *value.Error.
func normal(e Envelope) Envelope {
	if e.Err != nil {
		e.Err = value.FromError(e.Err)
	}
	if e.Payload != nil {
		e.Payload, _ = value.Copy(e.Payload)
	}
	return e
}

func TestRoundTrip(t *testing.T) {
	for _, e := range samples() {
		b, err := Encode(nil, &e)
		if err != nil {
			t.Fatalf("%s: %v", e.Signal, err)
		}
		if b[0] != Version {
			t.Fatalf("%s: version byte %d", e.Signal, b[0])
		}
		got, err := Decode(b)
		if err != nil {
			t.Fatalf("%s: %v", e.Signal, err)
		}
		if want := normal(e); !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: round trip\n got %#v\nwant %#v", e.Signal, got, want)
		}
	}
}

// Sentinels keep their identity: the very sentinel when it crossed as is,
// a match for errors.Is when it was wrapped.
func TestErrorsKeepTheirIdentity(t *testing.T) {
	tests := []struct {
		err  error
		is   error
		same bool
	}{
		{process.ErrNoProcess, process.ErrNoProcess, true},
		{fmt.Errorf("send to <n.1.1>: %w", process.ErrNoProcess), process.ErrNoProcess, false},
		{fmt.Errorf("a: %w", fmt.Errorf("b: %w", process.ErrMailboxFull)), process.ErrMailboxFull, false},
		{&process.LinkError{From: p1, Reason: process.ErrKilled}, process.ErrKilled, false},
		{ErrMalformed, ErrMalformed, true},
	}
	for _, tc := range tests {
		b, err := Encode(nil, &Envelope{Signal: Reply, Token: 1, Err: tc.err})
		if err != nil {
			t.Fatal(err)
		}
		e, err := Decode(b)
		if err != nil {
			t.Fatal(err)
		}
		if !errors.Is(e.Err, tc.is) || value.KindOf(e.Err) != value.KindOf(tc.err) || e.Err.Error() != tc.err.Error() {
			t.Errorf("%v: decoded %#v", tc.err, e.Err)
		}
		if tc.same && e.Err != tc.is {
			t.Errorf("%v: decoded a copy, not the sentinel", tc.err)
		}
	}
	// Two sentinels of one kind do not match each other.
	b, _ := Encode(nil, &Envelope{Signal: Reply, Token: 1, Err: process.ErrMailboxFull})
	e, _ := Decode(b)
	if errors.Is(e.Err, process.ErrQueueFull) {
		t.Fatal("mailbox full matches queue full")
	}
}

func TestEncodeRefusesWhatCannotCross(t *testing.T) {
	buf := []byte("keep")
	out, err := Encode(buf, &Envelope{Signal: Send, To: p2, Payload: map[string]any{"f": func() {}}})
	if value.KindOf(err) != value.KindInvalid || string(out) != "keep" {
		t.Fatalf("encode of a func: %q %v", out, err)
	}
}

func TestDecodeRefuses(t *testing.T) {
	good, _ := Encode(nil, &Envelope{Signal: Send, From: p1, To: p2, Topic: "t", Token: 5, TTL: time.Second, Payload: []any{1.0}, Err: process.ErrTimeout})
	for i := range good {
		if _, err := Decode(good[:i]); !errors.Is(err, ErrMalformed) {
			t.Fatalf("truncated at %d: %v", i, err)
		}
	}
	mutate := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	tests := []struct {
		name string
		b    []byte
		want error
	}{
		{"another version", mutate(func(b []byte) []byte { b[0] = Version + 1; return b }), ErrVersion},
		{"signal 0", mutate(func(b []byte) []byte { b[1] = 0; return b }), ErrMalformed},
		{"unknown signal", mutate(func(b []byte) []byte { b[1] = byte(lastSignal) + 1; return b }), ErrMalformed},
		{"unknown flag", mutate(func(b []byte) []byte { b[2] |= 0x80; return b }), ErrMalformed},
		{"trailing byte", append(append([]byte(nil), good...), 0), ErrMalformed},
		{"zero token", []byte{Version, byte(Reply), FlagToken, 0, 0, 0, 0, 0, 0, 0}, ErrMalformed},
		{"zero ttl", []byte{Version, byte(Send), FlagTTL, 0, 0, 0, 0, 0, 0, 0}, ErrMalformed},
		{"half a pid", []byte{Version, byte(Kill), 0, 0, 5, 0, 0, 0, 0}, ErrMalformed},
		{"a creation without an id", []byte{Version, byte(Kill), 0, 0, 0, 0, 1, 'n', 0, 7}, ErrMalformed},
		{"a name on a link", []byte{Version, byte(Link), FlagName, 0, 0, 0, 1, 'n', 0, 0, 1, 's'}, ErrMalformed},
		{"a name with a full pid", []byte{Version, byte(Send), FlagName, 0, 0, 0, 1, 'n', 1, 1, 1, 's'}, ErrMalformed},
		{"a whereis without a name", []byte{Version, byte(Whereis), FlagToken, 0, 0, 0, 1, 'n', 0, 0, 1}, ErrMalformed},
		{"a whereis without a token", []byte{Version, byte(Whereis), FlagName, 0, 0, 0, 1, 'n', 0, 0, 1, 's'}, ErrMalformed},
		{"an empty name", []byte{Version, byte(Send), FlagName, 0, 0, 0, 1, 'n', 0, 0, 0}, ErrMalformed},
		{"creation past 32 bits", []byte{Version, byte(Kill), 0, 1, 'n', 1, 0x80, 0x80, 0x80, 0x80, 0x10, 0, 0, 0}, ErrMalformed},
		{"error field not an error", []byte{Version, byte(Reply), FlagToken | FlagErr, 0, 0, 0, 0, 0, 0, 1, 4, 0}, ErrMalformed},
		{"a relayed link", []byte{Version, byte(Link), FlagRelayed, 1, 'a', 1, 1, 1, 'n', 1, 1}, ErrMalformed},
		{"a relayed send from no process", []byte{Version, byte(Send), FlagRelayed, 0, 0, 0, 1, 'n', 1, 1}, ErrMalformed},
		{"empty", nil, ErrMalformed},
	}
	for _, tc := range tests {
		if _, err := Decode(tc.b); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
}

// FuzzDecode: no input panics the decoder, and whatever decodes encodes
// again to an envelope that decodes the same.
func FuzzDecode(f *testing.F) {
	for _, e := range samples() {
		b, err := Encode(nil, &e)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{})
	f.Add([]byte{Version, byte(Send), knownFlags})
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := Decode(b)
		if err != nil {
			return
		}
		b2, err := Encode(nil, &e)
		if err != nil {
			t.Fatalf("re-encode %#v: %v", e, err)
		}
		e2, err := Decode(b2)
		if err != nil {
			t.Fatalf("decode of the re-encoding: %v", err)
		}
		if !sameEnvelope(e, e2) {
			t.Fatalf("second round trip:\n%#v\n%#v", e, e2)
		}
	})
}

// sameEnvelope compares two decoded envelopes, with NaN equal to NaN.
func sameEnvelope(a, b Envelope) bool {
	pa, pb := a.Payload, b.Payload
	a.Payload, b.Payload = nil, nil
	if !reflect.DeepEqual(a, b) {
		return false
	}
	ba, err1 := value.Encode(nil, pa)
	bb, err2 := value.Encode(nil, pb)
	if err1 != nil || err2 != nil {
		return false
	}
	// Maps encode in random order: compare by decoding both ways.
	va, _, _ := value.Decode(ba)
	vb, _, _ := value.Decode(bb)
	return fmt.Sprintf("%v", va) == fmt.Sprintf("%v", vb)
}

// Node names are interned up to a bound, and long ones never are.
func TestNodeNamesInterned(t *testing.T) {
	var tab internTable
	a, b := tab.intern([]byte("n1")), tab.intern([]byte("n1"))
	if a != "n1" || unsafe.StringData(a) != unsafe.StringData(b) {
		t.Fatal("a name decoded twice is not shared")
	}
	long := make([]byte, maxInternedLen+1)
	tab.intern(long)
	for i := range maxInterned + 10 {
		tab.intern(fmt.Appendf(nil, "x%d", i))
	}
	if n := len(*tab.m.Load()); n != maxInterned {
		t.Fatalf("%d names interned", n)
	}
}

// Topics and names are reused from recent frames: a frame like the last
// one decodes its labels without allocating; a long label is always its
// own copy, and a label that collides replaces the slot's, right either way.
func TestLabelsReused(t *testing.T) {
	frame, err := Encode(nil, &Envelope{Signal: Send, From: p1, To: process.PID{Node: "n2"}, Name: "app:pg", Topic: "pg.ops"})
	if err != nil {
		t.Fatal(err)
	}
	first, err := Decode(frame)
	if err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(100, func() {
		e, err := Decode(frame)
		if err != nil || e.Topic != "pg.ops" || e.Name != "app:pg" {
			t.Fatalf("decoded %+v, %v", e, err)
		}
	})
	if allocs != 0 {
		t.Fatalf("a repeated frame's labels cost %v allocations", allocs)
	}
	again, _ := Decode(frame)
	if unsafe.StringData(again.Topic) != unsafe.StringData(first.Topic) {
		t.Fatal("the topic is not reused")
	}
	var c labelCache
	long := bytes.Repeat([]byte("x"), labelMaxLen+1)
	if a, b := c.get(long), c.get(long); a != string(long) || unsafe.StringData(a) == unsafe.StringData(b) {
		t.Fatal("a long label is cached")
	}
	for i := range 4 * labelSlots {
		want := fmt.Sprintf("t%d", i)
		if got := c.get([]byte(want)); got != want {
			t.Fatalf("got %q for %q", got, want)
		}
	}
}

// A Bytes payload is written as the string of its bytes: the frame is the
// one a string payload makes, and it decodes to that string.
func TestBytesPayloadIsAString(t *testing.T) {
	from := process.PID{Node: "n1", ID: 3, Creation: 1}
	to := process.PID{Node: "n2", ID: 9, Creation: 2}
	body := []byte{1, 2, 0, 255, 'g'}
	asBytes := Envelope{Signal: Send, From: from, To: to, Topic: "pg.ops", Payload: Bytes(body), Err: errors.New("x")}
	asString := asBytes
	asString.Payload = string(body)
	fb, err := Encode(nil, &asBytes)
	if err != nil {
		t.Fatal(err)
	}
	fs, err := Encode(nil, &asString)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(fb, fs) {
		t.Fatalf("Bytes frame %x, string frame %x", fb, fs)
	}
	e, err := Decode(fb)
	if err != nil {
		t.Fatal(err)
	}
	if s, ok := e.Payload.(string); !ok || s != string(body) || e.Err == nil {
		t.Fatalf("decoded payload %#v, err %v", e.Payload, e.Err)
	}
	if _, err := EncodeLimit(nil, &asBytes, len(fb)-len(body)); !errors.Is(err, value.ErrTooLarge) {
		t.Fatalf("over the limit: %v", err)
	}
	// A *Bytes is the same payload: the frame copies the bytes, so the
	// sender's buffer may change once Encode has returned.
	buf := Bytes(slices.Clone(body))
	asPointer := asBytes
	asPointer.Payload = &buf
	fp, err := Encode(nil, &asPointer)
	if err != nil {
		t.Fatal(err)
	}
	clear(buf)
	if !bytes.Equal(fp, fs) {
		t.Fatalf("*Bytes frame %x, string frame %x", fp, fs)
	}
	if _, err := EncodeLimit(nil, &asPointer, len(fp)-len(body)); !errors.Is(err, value.ErrTooLarge) {
		t.Fatalf("*Bytes over the limit: %v", err)
	}
}

package pgdist

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/proctor-run/proctor/kinds/pgscope"
	"github.com/proctor-run/proctor/process"
)

var sender = process.PID{Node: "n2", ID: 7, Creation: 3}

func pids(ids ...uint64) []process.PID {
	out := make([]process.PID, len(ids))
	for i, id := range ids {
		out[i] = process.PID{Node: sender.Node, ID: id, Creation: sender.Creation}
	}
	return out
}

func TestCodecRoundTrip(t *testing.T) {
	groups := map[string][]process.PID{"a": pids(1, 1, 300), "b": pids(1 << 40), "ünïcode": pids(2)}
	got, err := decodeSync(string(appendSync([]byte{protoVersion}, groups)), sender)
	if err != nil || !maps.EqualFunc(got, groups, slices.Equal) {
		t.Fatalf("sync: %v %v", got, err)
	}
	ops := []pgscope.Op{{Group: "a", PIDs: pids(1, 2)}, {Leave: true, Group: "b", PIDs: pids(3)}}
	b := []byte{protoVersion}
	for _, o := range ops {
		b = appendOp(b, o)
	}
	gotOps, _, err := decodeOps(nil, nil, string(b), sender)
	if err != nil || !slices.EqualFunc(gotOps, ops, func(x, y pgscope.Op) bool {
		return x.Leave == y.Leave && x.Group == y.Group && slices.Equal(x.PIDs, y.PIDs)
	}) {
		t.Fatalf("ops: %+v %v", gotOps, err)
	}
	// The PIDs are the sender's: node and creation come from it.
	for _, p := range gotOps[0].PIDs {
		if p.Node != "n2" || p.Creation != 3 {
			t.Fatalf("pid %v", p)
		}
	}
}

// decodeOps decodes into the caller's buffers: a message decoded after
// another reuses them and allocates nothing, and each op's PIDs are its
// own (an append to one leaves the next op's alone).
func TestDecodeOpsReusesBuffers(t *testing.T) {
	ops := []pgscope.Op{{Group: "a", PIDs: pids(1, 2)}, {Leave: true, Group: "a", PIDs: pids(3)}}
	b := []byte{protoVersion}
	for _, o := range ops {
		b = appendOp(b, o)
	}
	payload := any(string(b))
	got, buf, err := decodeOps(nil, nil, payload, sender)
	if err != nil || len(got) != 2 || len(buf) != 3 {
		t.Fatalf("ops %+v, pids %v, %v", got, buf, err)
	}
	if first := append(got[0].PIDs, process.PID{}); !slices.Equal(got[1].PIDs, pids(3)) || len(first) != 3 {
		t.Fatalf("an append to the first op's PIDs changed the second's: %v", got[1].PIDs)
	}
	allocs := testing.AllocsPerRun(50, func() {
		got, buf, err = decodeOps(got[:0], buf[:0], payload, sender)
		if err != nil || len(got) != 2 || !slices.Equal(got[0].PIDs, pids(1, 2)) {
			t.Fatalf("ops %+v, %v", got, err)
		}
	})
	// The group names are copies (the scope may keep them); nothing else.
	if allocs > float64(len(ops)) {
		t.Fatalf("a message decoded into reused buffers costs %v allocations", allocs)
	}
}

func TestNotice(t *testing.T) {
	self := process.PID{Node: "n1", ID: 300, Creation: 7}
	scope, asked, pid, err := parseNotice(notice("app:pg", []string{"n1", "n3"}, self), "n3")
	if err != nil || scope != "app:pg" || !asked || pid != (process.PID{ID: 300, Creation: 7}) {
		t.Fatalf("%q %v %v %v", scope, asked, pid, err)
	}
	if _, asked, _, err := parseNotice(notice("app:pg", []string{"n1", "n3"}, self), "n2"); err != nil || asked {
		t.Fatalf("n2 asked: %v %v", asked, err)
	}
	// An older node's notice ends after the list: no process.
	old := notice("app:pg", nil, process.PID{})
	old = old[:len(old)-2]
	if scope, _, pid, err := parseNotice(old, "n2"); err != nil || scope != "app:pg" || !pid.IsZero() {
		t.Fatalf("older notice: %q %v %v", scope, pid, err)
	}
	// Too many names for a gossip packet: the list is left out, everyone
	// answers the notice.
	long := make([]string, 20)
	for i := range long {
		long[i] = strings.Repeat("x", 60) + string(rune('a'+i))
	}
	b := notice("app:pg", long, self)
	if len(b) > maxNotice {
		t.Fatalf("notice of %d bytes", len(b))
	}
	if _, asked, pid, err := parseNotice(b, long[0]); err != nil || asked || pid.ID != 300 {
		t.Fatalf("asked in a cut notice: %v %v %v", asked, pid, err)
	}
	for _, bad := range [][]byte{nil, {protoVersion}, {9, 1, 'a', 0}, {protoVersion, 5, 'a'}, {protoVersion, 1, 'a', 3, 1, 'n'}, {protoVersion, 1, 'a', 0, 5}, {protoVersion, 1, 'a', 0, 5, 0x80}} {
		if _, _, _, err := parseNotice(bad, "n1"); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
}

func TestCodecRefuses(t *testing.T) {
	for name, payload := range map[string]any{
		"not a string":  3.0,
		"empty":         "",
		"other version": string([]byte{2, 0}),
		"empty group":   string([]byte{protoVersion, 1, 0, 1, 1}),
		"pid zero":      string([]byte{protoVersion, 1, 1, 'g', 1, 0}),
		"count too big": string([]byte{protoVersion, 5, 1, 'g', 1, 1}),
		"duplicate":     string([]byte{protoVersion, 2, 1, 'g', 1, 1, 1, 'g', 1, 1}),
		"trailing":      string([]byte{protoVersion, 1, 1, 'g', 1, 1, 9}),
		"no members":    string([]byte{protoVersion, 1, 1, 'g', 0}),
		"overlong int":  string([]byte{protoVersion, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}),
	} {
		if _, err := decodeSync(payload, sender); err == nil {
			t.Errorf("sync %s: no error", name)
		}
	}
	for name, payload := range map[string]any{
		"no ops":     string([]byte{protoVersion}),
		"bad op":     string([]byte{protoVersion, 9, 1, 'g', 1, 1}),
		"no members": string([]byte{protoVersion, opJoin, 1, 'g', 0}),
		"cut short":  string([]byte{protoVersion, opLeave, 1, 'g', 2, 1}),
	} {
		if _, _, err := decodeOps(nil, nil, payload, sender); err == nil {
			t.Errorf("ops %s: no error", name)
		}
	}
}

// The decoders take what any node's scope sends: they must refuse what is
// not a message, and never panic or allocate past the input's size.
func FuzzDecode(f *testing.F) {
	f.Add(appendSync([]byte{protoVersion}, map[string][]process.PID{"a": pids(1, 2), "b": pids(3)}))
	f.Add(appendOp([]byte{protoVersion}, pgscope.Op{Group: "g", PIDs: pids(1)}))
	f.Add([]byte{protoVersion, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		if groups, err := decodeSync(string(b), sender); err == nil {
			n := 0
			for g, ps := range groups {
				n += len(g) + len(ps)
			}
			if n > len(b) {
				t.Fatalf("%d names and members from %d bytes", n, len(b))
			}
			// What decodes encodes back to the same state.
			again, err := decodeSync(string(appendSync([]byte{protoVersion}, groups)), sender)
			if err != nil || !maps.EqualFunc(again, groups, slices.Equal) {
				t.Fatalf("round trip: %v %v", again, err)
			}
		}
		if ops, _, err := decodeOps(nil, nil, string(b), sender); err == nil && len(ops) > len(b) {
			t.Fatalf("%d ops from %d bytes", len(ops), len(b))
		}
		_, _, _, _ = parseNotice(b, "n1")
	})
}

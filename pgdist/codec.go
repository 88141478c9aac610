package pgdist

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/proctor-run/proctor/kinds/pgscope"
	"github.com/proctor-run/proctor/process"
)

// The payload of every protocol message is one string of bytes (a value
// the envelope carries as is), version 1:
//
//	version  byte     1
//	body     the rest, by topic:
//
//	pg.ops       ops:    repeated { op byte (1 join, 2 leave), group, count uvarint, ids }
//	pg.sync      groups: count uvarint, repeated { group, count uvarint, ids }
//	pg.discover  groups, as pg.sync
//	pg.hello     nothing (an ask; the reply's value is the version, "1")
//
// A group is a uvarint length and its bytes (never empty); ids are
// uvarints. Every PID of a message is a process of the sending scope's
// node and incarnation, so a PID crosses as its ID alone: the receiver
// takes the node and creation from the sender (the transport vouches for
// the sender's node). A sync lists each member once per join.
const protoVersion byte = 1

// The topics of the protocol's messages.
const (
	topicHello    = "pg.hello"
	topicDiscover = "pg.discover"
	topicSync     = "pg.sync"
	topicOps      = "pg.ops"
)

// The ops of a pg.ops message.
const (
	opJoin  byte = 1
	opLeave byte = 2
)

// errMalformed: a payload that does not decode.
var errMalformed = errors.New("malformed pg message")

// errVersion: a payload of another protocol version.
var errVersion = errors.New("pg message of another protocol version")

func appendGroup(b []byte, group string, pids []process.PID) []byte {
	b = binary.AppendUvarint(b, uint64(len(group)))
	b = append(b, group...)
	b = binary.AppendUvarint(b, uint64(len(pids)))
	for _, p := range pids {
		b = binary.AppendUvarint(b, p.ID)
	}
	return b
}

// appendOp appends one op to an ops body (started with the version byte).
func appendOp(b []byte, o pgscope.Op) []byte {
	kind := opJoin
	if o.Leave {
		kind = opLeave
	}
	return appendGroup(append(b, kind), o.Group, o.PIDs)
}

// appendSync appends the groups body, groups sorted by name so that equal
// states encode alike.
func appendSync(b []byte, groups map[string][]process.PID) []byte {
	names := make([]string, 0, len(groups))
	for g, pids := range groups {
		if len(pids) > 0 {
			names = append(names, g)
		}
	}
	slices.Sort(names)
	b = binary.AppendUvarint(b, uint64(len(names)))
	for _, g := range names {
		b = appendGroup(b, g, groups[g])
	}
	return b
}

// reader decodes a payload; every read checks what is left, so hostile
// input fails with errMalformed and never allocates past its own size.
type reader struct {
	s    string
	from process.PID
}

func (r *reader) uvarint() (uint64, error) {
	var x uint64
	var shift uint
	for i := 0; i < len(r.s) && i < binary.MaxVarintLen64; i++ {
		c := r.s[i]
		if c < 0x80 {
			if i == binary.MaxVarintLen64-1 && c > 1 {
				return 0, errMalformed
			}
			r.s = r.s[i+1:]
			return x | uint64(c)<<shift, nil
		}
		x |= uint64(c&0x7f) << shift
		shift += 7
	}
	return 0, errMalformed
}

// count reads a count of items that take at least one byte each.
func (r *reader) count() (int, error) {
	n, err := r.uvarint()
	if err != nil || n > uint64(len(r.s)) {
		return 0, errMalformed
	}
	return int(n), nil
}

// str reads a string (a length and its bytes), copied.
func (r *reader) str() (string, error) {
	n, err := r.count()
	if err != nil {
		return "", err
	}
	s := strings.Clone(r.s[:n])
	r.s = r.s[n:]
	return s, nil
}

// group reads a group's name and its PIDs, appended to buf: it returns
// the name, buf with them, and where they start in it.
func (r *reader) group(buf []process.PID) (string, []process.PID, int, error) {
	n, err := r.count()
	if err != nil || n == 0 {
		return "", buf, 0, errMalformed
	}
	// A copy: the name outlives the payload in the scope's state, and
	// must not pin a large sync in memory.
	g := strings.Clone(r.s[:n])
	r.s = r.s[n:]
	k, err := r.count()
	if err != nil {
		return "", buf, 0, err
	}
	start := len(buf)
	buf = slices.Grow(buf, k)
	for range k {
		id, err := r.uvarint()
		if err != nil || id == 0 {
			return "", buf[:start], 0, errMalformed
		}
		buf = append(buf, process.PID{Node: r.from.Node, ID: id, Creation: r.from.Creation})
	}
	return g, buf, start, nil
}

// openPayload checks the payload's type and version and returns a reader
// of its body (a value: a message decodes without allocating a reader).
func openPayload(payload any, from process.PID) (reader, error) {
	s, ok := payload.(string)
	if !ok || len(s) == 0 {
		return reader{}, fmt.Errorf("%w: payload is %T", errMalformed, payload)
	}
	if s[0] != protoVersion {
		return reader{}, fmt.Errorf("%w: version %d (this node speaks %d)", errVersion, s[0], protoVersion)
	}
	return reader{s: s[1:], from: from}, nil
}

// decodeOps decodes a pg.ops payload from from, appending to ops; the
// ops' PIDs are appended to pids, which it returns too, so that a caller
// whose consumer keeps nothing of them (the scope's ApplyOps) reuses both
// buffers from one message to the next.
func decodeOps(ops []pgscope.Op, pids []process.PID, payload any, from process.PID) ([]pgscope.Op, []process.PID, error) {
	r, err := openPayload(payload, from)
	if err != nil {
		return nil, pids, err
	}
	for len(r.s) > 0 {
		kind := r.s[0]
		r.s = r.s[1:]
		if kind != opJoin && kind != opLeave {
			return nil, pids, errMalformed
		}
		var g string
		var start int
		g, pids, start, err = r.group(pids)
		if err != nil {
			return nil, pids, err
		}
		if len(pids) == start {
			return nil, pids, errMalformed
		}
		// Capped: an op's PIDs are its own, whatever comes after them.
		ops = append(ops, pgscope.Op{Leave: kind == opLeave, Group: g, PIDs: pids[start:len(pids):len(pids)]})
	}
	if len(ops) == 0 {
		return nil, pids, errMalformed
	}
	return ops, pids, nil
}

// decodeSync decodes a pg.sync or pg.discover payload from from.
func decodeSync(payload any, from process.PID) (map[string][]process.PID, error) {
	r, err := openPayload(payload, from)
	if err != nil {
		return nil, err
	}
	n, err := r.count()
	if err != nil {
		return nil, err
	}
	groups := make(map[string][]process.PID, n)
	for range n {
		g, pids, _, err := r.group(nil)
		if err != nil {
			return nil, err
		}
		if _, dup := groups[g]; dup || len(pids) == 0 {
			return nil, errMalformed
		}
		groups[g] = pids
	}
	if len(r.s) != 0 {
		return nil, errMalformed
	}
	return groups, nil
}

package cluster

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/proctor-run/proctor/remote/wire"
	"github.com/proctor-run/proctor/value"
)

// ProtocolVersion is the version of the transport's protocol: its
// handshake and framing. Nodes speak to each other only when their
// protocol and envelope (wire.Version) versions are the same. Version 2:
// the handshake runs inside TLS and its proofs cover the TLS session's
// keying material.
const ProtocolVersion byte = 2

// metaVersion is the version of the node metadata layout.
const metaVersion byte = 1

// Meta is what a node advertises about itself in memberlist's node
// metadata.
//
// Layout, version 1 (string: uvarint length, then bytes):
//
//	meta version  byte    1
//	protocol      byte    ProtocolVersion of the transport
//	envelope      byte    wire.Version
//	transport     string  host:port of the transport's listener
//	started       uvarint when the node joined: Unix nanoseconds (appended
//	                      later in version 1: absent, it reads as 0)
//	creation      uvarint the node's creation (process.Node.Creation),
//	                      idem
//	flags         uvarint bit 0: LeaveAcks (idem)
//
// A later version of the same layout may append fields; a reader ignores
// bytes after the fields it knows. A node whose meta version, protocol or
// envelope version differs is not a member this node talks to: it is
// ignored, with a log line.
type Meta struct {
	Protocol  byte
	Envelope  byte
	Transport string
	// Started is when the node started its membership: of two nodes that
	// claim one name, the one that started first keeps it.
	Started time.Time
	// Creation is the node's incarnation (process.Node.Creation): a node
	// restarted under its name has a new one.
	Creation uint32
	// LeaveAcks: the node acknowledges another's announcement that it is
	// leaving, and the one leaving waits for that before it leaves (see
	// announceLeave). False for a node of a build before this field.
	LeaveAcks bool
}

// metaLeaveAcks is the flags bit of Meta.LeaveAcks.
const metaLeaveAcks = 1

// ErrIncompatible: a node speaks another version of the metadata, the
// transport protocol or the envelope.
var ErrIncompatible = value.Sentinel("cluster.incompatible", value.KindNoConnection, "incompatible node")

// localMeta is this build's metadata for a transport listening on addr,
// of a node of creation that started at started.
func localMeta(addr string, started time.Time, creation uint32) Meta {
	return Meta{Protocol: ProtocolVersion, Envelope: wire.Version, Transport: addr, Started: started, Creation: creation, LeaveAcks: true}
}

// encode returns the wire form of m.
func (m Meta) encode() []byte {
	b := make([]byte, 0, 4+len(m.Transport))
	b = append(b, metaVersion, m.Protocol, m.Envelope)
	b = binary.AppendUvarint(b, uint64(len(m.Transport)))
	b = append(b, m.Transport...)
	var started uint64
	if !m.Started.IsZero() && m.Started.UnixNano() > 0 {
		started = uint64(m.Started.UnixNano())
	}
	b = binary.AppendUvarint(b, started)
	b = binary.AppendUvarint(b, uint64(m.Creation))
	var flags uint64
	if m.LeaveAcks {
		flags |= metaLeaveAcks
	}
	return binary.AppendUvarint(b, flags)
}

// decodeMeta reads metadata; ErrIncompatible (wrapped, with what differs)
// when it is not of a version this node speaks, another error when it is
// malformed.
func decodeMeta(b []byte) (Meta, error) {
	if len(b) == 0 {
		return Meta{}, fmt.Errorf("%w: no metadata (not a proctor node?)", ErrIncompatible)
	}
	if b[0] != metaVersion {
		return Meta{}, fmt.Errorf("%w: metadata version %d (this node reads %d)", ErrIncompatible, b[0], metaVersion)
	}
	if len(b) < 4 {
		return Meta{}, fmt.Errorf("metadata: %d bytes: truncated", len(b))
	}
	m := Meta{Protocol: b[1], Envelope: b[2]}
	n, k := binary.Uvarint(b[3:])
	if k <= 0 || n > uint64(len(b)-3-k) {
		return Meta{}, errors.New("metadata: transport address truncated")
	}
	m.Transport = string(b[3+k : 3+k+int(n)])
	rest := b[3+k+int(n):]
	if started, k := binary.Uvarint(rest); k > 0 {
		if started > 0 && started < 1<<63 {
			m.Started = time.Unix(0, int64(started))
		}
		rest = rest[k:]
		if cr, k := binary.Uvarint(rest); k > 0 && cr < 1<<32 {
			m.Creation = uint32(cr)
			if flags, k := binary.Uvarint(rest[k:]); k > 0 {
				m.LeaveAcks = flags&metaLeaveAcks != 0
			}
		}
	}
	if m.Protocol != ProtocolVersion {
		return m, fmt.Errorf("%w: transport protocol %d (this node speaks %d)", ErrIncompatible, m.Protocol, ProtocolVersion)
	}
	if m.Envelope != wire.Version {
		return m, fmt.Errorf("%w: envelope version %d (this node speaks %d)", ErrIncompatible, m.Envelope, wire.Version)
	}
	if _, _, err := net.SplitHostPort(m.Transport); err != nil {
		return m, fmt.Errorf("metadata: transport address %q: %w", m.Transport, err)
	}
	return m, nil
}

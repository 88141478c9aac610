package process

import (
	"fmt"
	"strconv"
	"strings"
)

// PID names a process: the node it lives on, its number on that node, and
// the node's creation (its incarnation), so a PID from before a node restart
// never reaches a process of the new incarnation.
type PID struct {
	Node     string
	ID       uint64
	Creation uint32
}

// IsZero reports whether p is the zero PID (no process).
func (p PID) IsZero() bool { return p.ID == 0 && p.Node == "" }

// String renders p as <node.id.creation>, the form ParsePID reads.
func (p PID) String() string {
	if p.IsZero() {
		return "<>"
	}
	b := make([]byte, 0, len(p.Node)+24)
	b = append(b, '<')
	b = append(b, p.Node...)
	b = append(b, '.')
	b = strconv.AppendUint(b, p.ID, 10)
	b = append(b, '.')
	b = strconv.AppendUint(b, uint64(p.Creation), 10)
	b = append(b, '>')
	return string(b)
}

// ParsePID parses the form String produces.
func ParsePID(s string) (PID, error) {
	if len(s) < 2 || s[0] != '<' || s[len(s)-1] != '>' {
		return PID{}, fmt.Errorf("%w: %q is not a pid", ErrInvalidPID, s)
	}
	body := s[1 : len(s)-1]
	c := strings.LastIndexByte(body, '.')
	if c < 0 {
		return PID{}, fmt.Errorf("%w: %q is not a pid", ErrInvalidPID, s)
	}
	i := strings.LastIndexByte(body[:c], '.')
	if i <= 0 {
		return PID{}, fmt.Errorf("%w: %q is not a pid", ErrInvalidPID, s)
	}
	id, err1 := strconv.ParseUint(body[i+1:c], 10, 64)
	cr, err2 := strconv.ParseUint(body[c+1:], 10, 32)
	if err1 != nil || err2 != nil || id == 0 {
		return PID{}, fmt.Errorf("%w: %q is not a pid", ErrInvalidPID, s)
	}
	return PID{Node: body[:i], ID: id, Creation: uint32(cr)}, nil
}

// IsPIDString reports whether s has the shape of a PID string rather than a
// registered name. Names never start with '<'.
func IsPIDString(s string) bool { return len(s) > 0 && s[0] == '<' }

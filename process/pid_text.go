package process

// MarshalText renders pid as its string form, so a PID in JSON (a view, a
// dead letter) reads as scripts see it: "<node.id.creation>".
func (p PID) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// UnmarshalText parses the string form of a PID.
func (p *PID) UnmarshalText(b []byte) error {
	pid, err := ParsePID(string(b))
	if err != nil {
		return err
	}
	*p = pid
	return nil
}

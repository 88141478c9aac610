// Package wire is the envelope codec: the bytes one node sends another for
// each signal of the process core (a message, a reply, an exit, a link, a
// monitor and their undoing). Payloads and errors inside an envelope use
// the value codec (package value), errors with their kind and sentinel
// code, so errors.Is still matches a sentinel on the receiving node.
//
// An envelope is self-delimiting only with the frame around it: the
// network that carries it (the in-memory network of package remote, or a
// length-prefixed TCP connection) delimits frames; one frame holds one
// envelope and nothing else.
//
// Format, version 2 (uvarint: encoding/binary's unsigned varint; string:
// uvarint length then bytes; pid: node string, id uvarint, creation
// uvarint — the zero PID is "", 0, 0):
//
//	version   byte   2
//	signal    byte   Signal
//	flags     byte   which optional fields follow (bits below)
//	from      pid
//	to        pid
//	topic     string        if flags&FlagTopic
//	name      string        if flags&FlagName    (a send or whereis to a
//	                                              registered name; to is
//	                                              then only the node: id 0)
//	token     uvarint       if flags&FlagToken   (never 0)
//	ttl       uvarint (ns)  if flags&FlagTTL     (never 0)
//	payload   value         if flags&FlagPayload (value codec)
//	err       value error   if flags&FlagErr     (value codec, an *Error)
//
// Version 2 added the Whereis signal (11); version 3 the flag relayed
// (64): a Send handed on by its sender on behalf of From, a process of
// another node (a router forwarding a remote process's message or ask).
//
// A deadline crosses as the time left (ttl), not as a point in time, so
// the two nodes' clocks need not agree; the receiver adds it to its own
// clock. A decoder refuses another version, an unknown signal or flag,
// missing or trailing bytes, and a zero token or ttl that is flagged
// present: every frame decodes to exactly one envelope or to an error.
package wire

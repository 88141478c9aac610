// Package words writes the text of messages: whole-word replacement and
// durations without zero units.
package words

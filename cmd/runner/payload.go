package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/proctor-run/proctor/internal/readfile"
	"github.com/proctor-run/proctor/observe"
)

// stdin is where `send -` and `ask -` read their payload (tests replace it).
var stdin io.Reader = os.Stdin

// maxPayload bounds a payload read from standard input or a file: the
// node takes request bodies of at most this much (POST /v1/send, /v1/ask).
const maxPayload = observe.DefaultMaxRequestBytes

// readPayload returns the JSON payload arg names: "-" reads standard
// input, "@FILE" the file (no JSON value starts with "@"), anything else
// is the payload itself. What is read is bounded by maxPayload.
func readPayload(arg string) (string, error) {
	var src io.Reader
	what := "standard input"
	switch {
	case arg == "-":
		src = stdin
	case strings.HasPrefix(arg, "@"):
		name := arg[1:]
		if name == "" {
			return "", errors.New(`payload "@": want @FILE`)
		}
		b, err := readSmallFile(name, maxPayload)
		if errors.Is(err, readfile.ErrTooLarge) {
			return "", fmt.Errorf("payload from %s: larger than %d bytes (1 MiB), the most the node takes in a request", name, maxPayload)
		}
		if err != nil {
			return "", fmt.Errorf("payload: %w", err)
		}
		return string(b), nil
	default:
		return arg, nil
	}
	b, err := io.ReadAll(io.LimitReader(src, maxPayload+1))
	if err != nil {
		return "", fmt.Errorf("payload from %s: %w", what, err)
	}
	if len(b) > maxPayload {
		return "", fmt.Errorf("payload from %s: larger than %d bytes (1 MiB), the most the node takes in a request", what, maxPayload)
	}
	return string(b), nil
}

// quoteShort quotes s for an error message, cut to its first 80 bytes.
func quoteShort(s string) string {
	if len(s) > 80 {
		return fmt.Sprintf("%q… (%d bytes)", s[:80], len(s))
	}
	return fmt.Sprintf("%q", s)
}

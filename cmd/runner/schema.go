package main

import (
	"fmt"
	"io"

	"github.com/proctor-run/proctor/config"
)

// schema prints the JSON Schema of the configuration format, for the
// kinds the runner knows.
func schema(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		fmt.Fprintln(stderr, "usage: runner schema")
		return 2
	}
	b, err := config.SchemaJSON(newKinds(io.Discard, nil))
	if err != nil {
		fmt.Fprintf(stderr, "runner schema: %v\n", err)
		return 1
	}
	stdout.Write(b)
	return 0
}

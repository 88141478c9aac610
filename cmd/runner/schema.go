package main

import (
	"fmt"
	"io"

	"github.com/proctor-run/proctor/config"
	"github.com/proctor-run/proctor/node"
)

// schema prints the JSON Schema of the configuration format, for the
// kinds the runner knows.
func schema(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		fmt.Fprintln(stderr, "usage: runner schema")
		return 2
	}
	b, err := config.SchemaJSON(node.DefaultKinds(io.Discard))
	if err != nil {
		fmt.Fprintf(stderr, "runner schema: %v\n", err)
		return 1
	}
	stdout.Write(b)
	return 0
}

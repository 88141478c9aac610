package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"

	"github.com/proctor-run/proctor/lua/stubs"
	"github.com/proctor-run/proctor/node"
)

// stubsCmd writes the LuaLS stubs of the runner's Lua API into DIR, and a
// .luarc.json (by default in the working directory, the workspace root)
// that points LuaLS at them.
func stubsCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("stubs", flag.ContinueOnError)
	fs.SetOutput(stderr)
	luarc := fs.String("luarc", ".luarc.json", "where to write the LuaLS configuration (\"\": nowhere)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: runner stubs [--luarc FILE] DIR")
		printFlags(stderr, fs)
	}
	paths, _, err := parseInterleaved(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "runner stubs: %v\n", err)
		return 2
	}
	if len(paths) != 1 {
		fs.Usage()
		return 2
	}
	if err := stubs.Write(paths[0], *luarc, node.LuaHost(node.DefaultKinds(io.Discard)).Surface()); err != nil {
		fmt.Fprintf(stderr, "runner stubs: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "wrote the Lua API stubs to %s", filepath.Clean(paths[0]))
	if *luarc != "" {
		fmt.Fprintf(stdout, " and %s", *luarc)
	}
	fmt.Fprintln(stdout)
	return 0
}

package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
)

// printFlags lists fs's flags as the runner's usage, its docs (docs/cli.md)
// and its error messages write them: with two dashes ("--main ENTRY"),
// each with its meaning and its default. flag.PrintDefaults would print
// "-main", a form the rest of the runner never shows.
func printFlags(w io.Writer, fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		name, usage := flag.UnquoteUsage(f)
		line := "  --" + f.Name
		if name != "" {
			line += " " + name
		}
		fmt.Fprintln(w, line)
		usage = strings.ReplaceAll(usage, "\n", "\n    \t")
		if def := f.DefValue; def != "" && def != "false" && def != "0" && !strings.Contains(usage, "(default") {
			if strings.ContainsAny(def, " \t") {
				def = fmt.Sprintf("%q", def)
			}
			usage += fmt.Sprintf(" (default %s)", def)
		}
		fmt.Fprintf(w, "    \t%s\n", usage)
	})
}

package main

import (
	"flag"
	"fmt"
	"strings"

	"github.com/proctor-run/proctor/internal/suggest"
)

// undefinedFlag is how the flag package words an unknown flag.
const undefinedFlag = "flag provided but not defined: -"

// suggestFlag, for a parse error of fs about an unknown flag, returns the
// flag it most likely meant ("" when none is close): the "did you mean"
// the flag package does not give.
func suggestFlag(fs *flag.FlagSet, err error) string {
	name, ok := strings.CutPrefix(err.Error(), undefinedFlag)
	if !ok {
		return ""
	}
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	return suggest.Closest(strings.TrimPrefix(name, "-"), names)
}

// withFlagSuggestion adds to an unknown-flag error of fs the flag it most
// likely meant; other errors (and flag.ErrHelp) are returned as they are.
func withFlagSuggestion(fs *flag.FlagSet, err error) error {
	if s := suggestFlag(fs, err); s != "" {
		return fmt.Errorf("%w; did you mean --%s?", err, s)
	}
	return err
}

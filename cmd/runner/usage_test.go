package main

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// `runner run -h` describes the flags the build has, as docs/cli.md does:
// the same flags, written with two dashes.
func TestRunHelpMatchesTheBuild(t *testing.T) {
	var help bytes.Buffer
	if _, err := parseRun([]string{"-h"}, &help); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("parseRun -h: %v", err)
	}
	var inHelp []string
	for _, line := range strings.Split(help.String(), "\n") {
		if strings.HasPrefix(line, "  -") {
			if !strings.HasPrefix(line, "  --") {
				t.Errorf("a flag with one dash: %q", line)
			}
			inHelp = append(inHelp, strings.Fields(strings.TrimLeft(line, " -"))[0])
		}
	}
	doc, err := os.ReadFile("../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	section := string(doc)
	section = section[strings.Index(section, "## `runner run`"):]
	section = section[:strings.Index(section[3:], "\n## ")+3]
	var inDocs []string
	for _, m := range regexp.MustCompile("(?m)^\\| `--([a-z-]+)").FindAllStringSubmatch(section, -1) {
		inDocs = append(inDocs, m[1])
	}
	slices.Sort(inHelp)
	slices.Sort(inDocs)
	if !slices.Equal(inHelp, inDocs) {
		t.Fatalf("runner run -h lists %v\ndocs/cli.md lists     %v", inHelp, inDocs)
	}
	for _, want := range []string{"--main ENTRY", "a name only one namespace has", "(default info)", "at least 16 bytes"} {
		if !strings.Contains(help.String(), want) {
			t.Errorf("the help lacks %q:\n%s", want, help.String())
		}
	}
}

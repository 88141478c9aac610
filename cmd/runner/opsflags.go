package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/proctor-run/proctor/internal/readfile"
	"github.com/proctor-run/proctor/observe"
)

// opsFlags are the flags of run that open the node to operators: the
// token of the write endpoints, pprof, and the dead-letter ring.
type opsFlags struct {
	tokenFile   string
	token       string // read from tokenFile by check
	pprof       bool
	deadLetters int
}

// Bounds of an HTTP token: long enough not to be guessed, short enough to
// be a token and not a file read by mistake.
const (
	minTokenLen = 16
	maxTokenLen = 4096
)

func addOpsFlags(fs *flag.FlagSet) *opsFlags {
	of := &opsFlags{}
	fs.StringVar(&of.tokenFile, "http-token-file", "", "`FILE` holding the bearer token of the state-changing HTTP endpoints (POST /v1/send, /v1/ask, …); without it they are off")
	fs.BoolVar(&of.pprof, "pprof", false, "serve net/http/pprof under /debug/pprof/ on the --http address")
	fs.IntVar(&of.deadLetters, "dead-letters", observe.DefaultDeadLetterKeep, "keep the latest `N` dead letters for /v1/dead-letters and /ui (0 keeps none; they are still counted)")
	return of
}

// check validates the flags against --http and reads the token.
func (of *opsFlags) check(http string) error {
	if http == "" {
		switch {
		case of.tokenFile != "":
			return errors.New("--http-token-file needs --http")
		case of.pprof:
			return errors.New("--pprof needs --http")
		}
	}
	if of.deadLetters < 0 || of.deadLetters > observe.MaxDeadLetterKeep {
		return fmt.Errorf("--dead-letters %d: want 0 to %d", of.deadLetters, observe.MaxDeadLetterKeep)
	}
	if of.tokenFile == "" {
		return nil
	}
	tok, err := readToken(of.tokenFile)
	if err != nil {
		return fmt.Errorf("--http-token-file: %w", err)
	}
	of.token = tok
	return nil
}

// keep is the ring size for observe.DeadLetterOptions.Keep.
func (of *opsFlags) keep() int {
	if of.deadLetters == 0 {
		return -1 // none; observe's zero means its default
	}
	return of.deadLetters
}

// readToken reads a bearer token: the file's text, surrounding whitespace
// trimmed.
func readToken(file string) (string, error) {
	b, err := readSmallFile(file, maxTokenLen+64)
	if err != nil {
		return "", fmt.Errorf("%w (want a small regular file holding the token)", err)
	}
	tok := strings.TrimSpace(string(b))
	switch {
	case len(tok) < minTokenLen:
		return "", fmt.Errorf("%s holds a %d-byte token; want at least %d bytes (e.g. 32 hex characters)", file, len(tok), minTokenLen)
	case len(tok) > maxTokenLen:
		return "", fmt.Errorf("%s holds a %d-byte token; want at most %d bytes", file, len(tok), maxTokenLen)
	case strings.ContainsFunc(tok, func(r rune) bool { return r <= ' ' || r == 0x7f }):
		return "", fmt.Errorf("%s: the token may not hold spaces or control characters", file)
	}
	return tok, nil
}

// fileReadTimeout bounds a read of the token file or a payload file, as
// Loader.ReadTimeout bounds a configuration file's (tests shorten it).
var fileReadTimeout = readfile.DefaultReadTimeout

// readSmallFile reads a file the command line names (the token, a
// payload) as configuration files are read (readfile.Regular): a regular
// file of at most limit bytes, nothing under /proc, /sys or /dev, within
// fileReadTimeout, so that a token file symlinked to /proc/kmsg or a hung
// NFS mount fails start-up with an error naming the file instead of
// blocking it. The error starts with the path.
func readSmallFile(path string, limit int64) ([]byte, error) {
	b, _, err := readfile.Regular(context.Background(), path, limit, fileReadTimeout)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return b, nil
}

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/proctor-run/proctor/kinds/supervisor"
	"github.com/proctor-run/proctor/observe"
)

// The commands that talk to a running node's HTTP endpoint: send, ask,
// entries and tree. Exit codes: 0 done, 1 the node refused or could not be
// reached (its error on stderr), 2 a bad command line.

const remoteUsage = `usage:
  runner send [--http-token-file F] [--key K] ADDR DEST TOPIC [JSON | - | @FILE]
  runner ask  [--http-token-file F] [--timeout D] [--key K] ADDR DEST TOPIC [JSON | - | @FILE]
  runner entries ADDR
  runner tree ADDR
ADDR is the node's --http address (host:port or http://host:port); DEST a
PID, a registered name or name@node; JSON the payload (default null), or
- to read it from standard input, @FILE from a file (at most 1 MiB).
send exits 0 once the node accepted the message (fire-and-forget: one that
reaches no one is a dead letter); ask reports a failure.
`

// remoteTimeout bounds a request other than an ask.
const remoteTimeout = 30 * time.Second

// maxResponse bounds what is read of a node's answer.
const maxResponse = 64 << 20

func remote(cmd string, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, remoteUsage)
		printFlags(stderr, fs)
	}
	var tokenFile, key string
	timeout := 5 * time.Second
	if cmd == "send" || cmd == "ask" {
		fs.StringVar(&tokenFile, "http-token-file", "", "`FILE` holding the node's bearer token (its --http-token-file)")
		fs.StringVar(&key, "key", "", "route by `KEY`: DEST is a supervisor.partition or a consistent_hash router.pool, and the message goes to its worker or routee for KEY")
	}
	if cmd == "ask" {
		fs.DurationVar(&timeout, "timeout", timeout, "how long the node waits for the reply (at most "+observe.MaxAskTimeout.String()+")")
	}
	pos, _, err := parseInterleaved(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	bad := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "runner %s: "+format+"\n", append([]any{cmd}, a...)...)
		return 2
	}
	if err != nil {
		fmt.Fprintf(stderr, "runner %s: %v\n", cmd, err)
		return 2
	}
	switch cmd {
	case "entries", "tree":
		if len(pos) != 1 {
			return bad("want ADDR\n%s", remoteUsage)
		}
	default:
		if len(pos) < 3 || len(pos) > 4 {
			return bad("want ADDR DEST TOPIC [JSON | - | @FILE]\n%s", remoteUsage)
		}
	}
	base, err := baseURL(pos[0])
	if err != nil {
		return bad("%v", err)
	}
	c := &client{base: base, http: &http.Client{Timeout: remoteTimeout}}
	switch cmd {
	case "entries":
		return c.report(stdout, stderr, cmd, "/v1/entries", printEntries)
	case "tree":
		return c.report(stdout, stderr, cmd, "/v1/supervisors", printTrees)
	}
	if cmd == "ask" && (timeout <= 0 || timeout > observe.MaxAskTimeout) {
		return bad("--timeout %s: want above 0 and at most %s", timeout, observe.MaxAskTimeout)
	}
	body := map[string]any{"dest": pos[1], "topic": pos[2]}
	if key != "" {
		body["key"] = key
	}
	if len(pos) == 4 {
		payload, err := readPayload(pos[3])
		if err != nil {
			return bad("%v", err)
		}
		if !json.Valid([]byte(payload)) {
			return bad("payload %s is not JSON (a string is written with its quotes: '\"text\"')", quoteShort(payload))
		}
		body["payload"] = json.RawMessage(payload)
	}
	if tokenFile != "" {
		if c.token, err = readToken(tokenFile); err != nil {
			return bad("--http-token-file: %v", err)
		}
	}
	if cmd == "ask" {
		body["timeout"] = timeout.String()
		c.http.Timeout = timeout + remoteTimeout
	}
	var res struct {
		Reply json.RawMessage `json:"reply"`
		Error json.RawMessage `json:"error"`
	}
	if err := c.post("/v1/"+cmd, body, &res); err != nil {
		fmt.Fprintf(stderr, "runner %s: %v\n", cmd, err)
		return 1
	}
	if cmd == "send" {
		return 0
	}
	if len(res.Error) > 0 {
		var e struct{ Kind, Message string }
		json.Unmarshal(res.Error, &e)
		fmt.Fprintf(stderr, "runner ask: the reply is an error: %s: %s\n", e.Kind, e.Message)
		return 1
	}
	var pretty bytes.Buffer
	if len(res.Reply) == 0 {
		res.Reply = json.RawMessage("null")
	}
	if err := json.Indent(&pretty, res.Reply, "", "  "); err != nil {
		fmt.Fprintf(stderr, "runner ask: the node's answer is not JSON: %v\n", err)
		return 1
	}
	fmt.Fprintln(stdout, pretty.String())
	return 0
}

// baseURL turns ADDR into the endpoint's URL.
func baseURL(addr string) (*url.URL, error) {
	if !strings.Contains(addr, "://") {
		if err := checkHostPort(addr); err != nil {
			return nil, fmt.Errorf("ADDR: %w", err)
		}
		addr = "http://" + addr
	}
	u, err := url.Parse(addr)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("ADDR %q: want host:port or http://host:port", addr)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	return u, nil
}

type client struct {
	base  *url.URL
	http  *http.Client
	token string
}

func (c *client) url(path string) string { return c.base.String() + path }

// do sends req and decodes a 200 answer into out; any other status is an
// error holding the node's own message.
func (c *client) do(req *http.Request, out any) error {
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		var e struct{ Error string }
		if json.Unmarshal(b, &e) == nil && e.Error != "" {
			return fmt.Errorf("%s: %s", resp.Status, e.Error)
		}
		return fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(b)))
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("the node's answer is not what was expected: %w", err)
	}
	return nil
}

func (c *client) post(path string, body any, out any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	if len(b) > maxPayload {
		// The payload alone may fit while the request around it does not.
		return fmt.Errorf("the request is %d bytes with its destination and topic, larger than the %d (1 MiB) the node takes", len(b), maxPayload)
	}
	req, err := http.NewRequest(http.MethodPost, c.url(path), bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	return c.do(req, out)
}

// report GETs path and prints it with print.
func (c *client) report(stdout, stderr io.Writer, cmd, path string, print func(io.Writer, []byte) error) int {
	req, err := http.NewRequest(http.MethodGet, c.url(path), nil)
	if err != nil {
		fmt.Fprintf(stderr, "runner %s: %v\n", cmd, err)
		return 1
	}
	var raw json.RawMessage
	if err := c.do(req, &raw); err != nil {
		fmt.Fprintf(stderr, "runner %s: %v\n", cmd, err)
		return 1
	}
	if err := print(stdout, raw); err != nil {
		fmt.Fprintf(stderr, "runner %s: %v\n", cmd, err)
		return 1
	}
	return 0
}

// printEntries prints GET /v1/entries as a table.
func printEntries(w io.Writer, raw []byte) error {
	var es []struct{ ID, Kind, Status string }
	if err := json.Unmarshal(raw, &es); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tKIND\tSTATUS")
	for _, e := range es {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", e.ID, e.Kind, e.Status)
	}
	return tw.Flush()
}

// printTrees prints GET /v1/supervisors as trees.
func printTrees(w io.Writer, raw []byte) error {
	var sups []struct {
		ID   string               `json:"id"`
		View *supervisor.TreeView `json:"view"`
	}
	if err := json.Unmarshal(raw, &sups); err != nil {
		return err
	}
	if len(sups) == 0 {
		fmt.Fprintln(w, "no supervisor is running")
		return nil
	}
	for _, s := range sups {
		v := s.View
		if v == nil {
			fmt.Fprintf(w, "%s (no view)\n", s.ID)
			continue
		}
		fmt.Fprintf(w, "%s  %s %s  %s  %s\n", s.ID, v.Kind, v.Strategy, v.PID, v.Status)
		printChildren(w, v, "")
	}
	return nil
}

func printChildren(w io.Writer, v *supervisor.TreeView, indent string) {
	kids := v.Children
	if more := v.ChildrenTotal - len(kids); v.Truncated && more > 0 {
		defer fmt.Fprintf(w, "%s└─ … %d more children\n", indent, more)
	}
	for i, c := range kids {
		branch, next := "├─ ", "│  "
		if i == len(kids)-1 {
			branch, next = "└─ ", "   "
		}
		pid := "-"
		if c.PID != nil {
			pid = *c.PID
		}
		line := fmt.Sprintf("%s%s%s  %s  %s  %s  %s  restarts=%d", indent, branch, c.ID, c.Process, c.Type, c.Status, pid, c.Restarts)
		if c.LastExit != "" {
			line += fmt.Sprintf("  last_exit=%q", c.LastExit)
		}
		fmt.Fprintln(w, line)
		switch {
		case c.Tree != nil:
			printChildren(w, c.Tree, indent+next)
		case c.Truncated:
			fmt.Fprintf(w, "%s%s…\n", indent, next)
		}
	}
}

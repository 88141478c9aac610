package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The rejoin measurements of issue 23 ("Restarts and starts that rejoin
// slowly"): real runners on 127.0.0.1, the time from a restart (or a
// start) to identical pg membership on every node. The normal suite runs
// them with 4 nodes; -rejoin12 runs the 12 (a minute or two):
//
//	go test ./cmd/runner -run TestRejoin -rejoin12 -count 3 -v
//
// REJOIN_DEBUG=1 in the environment shows every node's view and log tail
// with each figure; REJOIN_DEBUG=debug runs the runners at debug level
// and shows their whole logs.
var rejoin12 = flag.Bool("rejoin12", false, "run the rejoin measurements (TestRejoin) with 12 runners as well as 4")

// rejoinTarget is the target; rejoinBound is what fails the test,
// generous for a loaded machine (the figures are logged either way).
const (
	rejoinTarget = 3 * time.Second
	rejoinBound  = 10 * time.Second
)

// rejoinConfig is a cluster in which each node's scope has the defaults
// users get (anti-entropy, breaker) and one member of group g.
func rejoinConfig(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	yaml := `namespace: pgc
entries:
  - name: pg
    kind: pg.scope
    lifecycle: {auto_start: true}
  - name: member
    kind: process.lua
    source: file://member.lua
    lifecycle: {auto_start: true, depends_on: [pg]}
`
	lua, err := os.ReadFile("testdata/pgcluster/member.lua")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "pg.yaml"), []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "member.lua"), lua, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// rnode is one runner of a rejoin measurement.
type rnode struct {
	name                    string
	r                       *runner
	http, gossip, transport string
}

// rcluster is the runners of one measurement.
type rcluster struct {
	t           *testing.T
	dir, secret string
	nodes       []*rnode
	seed        string
	earlier     []*runner // runners killed and replaced
	last        string    // what the last check of identical saw differ
}

// launch starts runner name with the flags extra, without waiting.
func (c *rcluster) launch(name, seed string, extra ...string) *rnode {
	args := []string{"run", "--log-format", "json", "--no-watch", "--node", name, "--http", "127.0.0.1:0",
		"--cluster-bind", "127.0.0.1:0", "--cluster-secret-file", c.secret}
	if seed != "" {
		args = append(args, "--cluster-join", seed)
	}
	if os.Getenv("REJOIN_DEBUG") == "debug" {
		args = append(args, "--log-level", "debug")
	}
	return &rnode{name: name, r: start(c.t, append(append(args, extra...), c.dir)...)}
}

// ready waits for n's HTTP and cluster addresses.
func (c *rcluster) ready(n *rnode) {
	c.t.Helper()
	select {
	case n.http = <-n.r.addr:
	case <-time.After(30 * time.Second):
		c.t.Fatalf("%s: no HTTP address logged:\n%s", n.name, n.r.logs())
	}
	n.r.waitFor(c.t, n.name+" to log its cluster address", func() bool {
		n.gossip = logged(n.r, "cluster: started", "gossip")
		n.transport = logged(n.r, "cluster: started", "transport")
		return n.gossip != ""
	})
}

// startOneByOne starts n nodes, each joining the first once it runs, and
// waits for identical membership.
func (c *rcluster) startOneByOne(n int) {
	c.t.Helper()
	for i := range n {
		node := c.launch(fmt.Sprintf("n%d", i+1), c.seed)
		c.ready(node)
		if i == 0 {
			c.seed = node.gossip
		}
		c.nodes = append(c.nodes, node)
	}
	if d, ok := c.converged(time.Now(), 60*time.Second); !ok {
		c.t.Fatalf("%d nodes started one by one: membership not identical after %s:\n%s", n, d, c.explain())
	}
}

// groupMembers returns the members of group g as the runner at httpAddr
// sees them, sorted; ok is false when it cannot tell (not up yet).
func groupMembers(httpAddr string) (members []string, ok bool) {
	if httpAddr == "" {
		return nil, false
	}
	cl := http.Client{Timeout: 2 * time.Second}
	resp, err := cl.Get("http://" + httpAddr + "/v1/entries/pgc:pg")
	if err != nil {
		return nil, false
	}
	defer resp.Body.Close()
	var d struct {
		View struct {
			Groups []struct {
				Name    string
				Members []string
			}
		}
	}
	if resp.StatusCode != 200 || json.NewDecoder(resp.Body).Decode(&d) != nil {
		return nil, false
	}
	for _, g := range d.View.Groups {
		if g.Name == "g" {
			return slices.Sorted(slices.Values(g.Members)), true
		}
	}
	return []string{}, true
}

// identical reports whether every node holds the same members of g: one
// of each node, the one that node holds itself (so that a member of a
// node's earlier run, on the same node name, does not pass).
func (c *rcluster) identical() bool {
	views := make([][]string, len(c.nodes))
	oks := make([]bool, len(c.nodes))
	var wg sync.WaitGroup
	for i, n := range c.nodes {
		select {
		case n.http = <-n.r.addr:
		default:
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			views[i], oks[i] = groupMembers(n.http)
		}()
	}
	wg.Wait()
	var want []string
	for i, n := range c.nodes {
		if !oks[i] {
			c.last = n.name + " does not answer"
			return false
		}
		var own []string
		for _, m := range views[i] {
			if strings.HasPrefix(m, "<"+n.name+".") {
				own = append(own, m)
			}
		}
		if len(own) != 1 {
			c.last = fmt.Sprintf("%s holds %v of its own", n.name, own)
			return false
		}
		want = append(want, own[0])
	}
	slices.Sort(want)
	var differ []string
	for i, v := range views {
		if !slices.Equal(v, want) {
			differ = append(differ, fmt.Sprintf("%s holds %v", c.nodes[i].name, v))
		}
	}
	c.last = fmt.Sprintf("want %v; %s", want, strings.Join(differ, "; "))
	return len(differ) == 0
}

// converged polls until the membership is identical, returning how long
// after since it first was, and false when it was not within limit.
func (c *rcluster) converged(since time.Time, limit time.Duration) (time.Duration, bool) {
	for {
		ok := c.identical()
		d := time.Since(since)
		if ok {
			return d, true
		}
		if d > limit {
			return d, false
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// explain shows each node's view and the tail of its log.
func (c *rcluster) explain() string {
	var b strings.Builder
	fmt.Fprintf(&b, "at the bound: %s\n", c.last)
	for _, n := range c.nodes {
		m, ok := groupMembers(n.http)
		fmt.Fprintf(&b, "%s (%s): %v %v\n", n.name, n.http, ok, m)
	}
	for _, n := range c.nodes {
		lines := strings.Split(n.r.logs(), "\n")
		fmt.Fprintf(&b, "--- %s, last lines:\n%s\n", n.name, strings.Join(lines[max(0, len(lines)-explainLines):], "\n"))
	}
	return b.String()
}

// explainLines is how many of each runner's last log lines explain shows.
var explainLines = 15

func init() {
	if os.Getenv("REJOIN_DEBUG") != "" {
		explainLines = 60
		if os.Getenv("REJOIN_DEBUG") == "debug" {
			explainLines = 100000
		}
	}
}

// stop ends every runner.
func (c *rcluster) stop() {
	for _, n := range c.nodes {
		_ = n.r.cmd.Process.Signal(syscall.SIGKILL)
		n.r.wait(c.t)
	}
	for _, r := range c.earlier {
		if r.cmd.ProcessState == nil {
			_ = r.cmd.Process.Signal(syscall.SIGKILL)
			r.wait(c.t)
		}
	}
}

// kill SIGKILLs the node in the middle of the list and waits for its end;
// it returns the node and its index, for its successor.
func (c *rcluster) kill() (*rnode, int) {
	c.t.Helper()
	i := len(c.nodes) / 2
	victim := c.nodes[i]
	if err := victim.r.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		c.t.Fatal(err)
	}
	victim.r.wait(c.t)
	c.earlier = append(c.earlier, victim.r)
	return victim, i
}

// count counts the log lines of every runner (replaced ones too) that
// hold s.
func (c *rcluster) count(s string) int {
	n := 0
	for _, r := range c.earlier {
		n += strings.Count(r.logs(), s)
	}
	for _, node := range c.nodes {
		n += strings.Count(node.r.logs(), s)
	}
	return n
}

// rejoinSizes is 4, and 12 with -rejoin12.
func rejoinSizes() []int {
	if *rejoin12 {
		return []int{4, 12}
	}
	return []int{4}
}

func newRCluster(t *testing.T) *rcluster {
	binary(t) // built before anything is timed
	secret, _ := clusterSecret(t)
	c := &rcluster{t: t, dir: rejoinConfig(t), secret: secret}
	t.Cleanup(c.stop)
	return c
}

// report logs a figure in a form the notes and docs/cluster.md quote, and
// fails past rejoinBound.
func report(t *testing.T, what string, d time.Duration, ok bool, c *rcluster) {
	t.Helper()
	t.Logf("rejoin figure: %s: identical pg membership after %s (target %s)", what, d.Round(time.Millisecond), rejoinTarget)
	if !ok {
		t.Fatalf("%s: pg membership not identical after %s:\n%s", what, d, c.explain())
	}
	if os.Getenv("REJOIN_DEBUG") != "" {
		t.Logf("measured from %s\n%s", time.Now().Add(-d).UTC().Format("15:04:05.000"), c.explain())
	}
}

// eachRestart runs restart, in parallel with the other tests, for each
// size of cluster, started one node after another.
func eachRestart(t *testing.T, restart func(t *testing.T, n int, c *rcluster)) {
	t.Parallel()
	defer http.DefaultClient.CloseIdleConnections()
	for _, n := range rejoinSizes() {
		t.Run(fmt.Sprintf("%d_nodes", n), func(t *testing.T) {
			c := newRCluster(t)
			c.startOneByOne(n)
			restart(t, n, c)
		})
	}
}

// TestRejoinAfterDeclaredDead: a node SIGKILLed, declared dead by the
// others, and restarted with the same name on the same addresses (gossip
// and transport ports): every node holds the same members within the
// bound, the restarted node's new member among them.
func TestRejoinAfterDeclaredDead(t *testing.T) {
	eachRestart(t, func(t *testing.T, n int, c *rcluster) {
		victim, i := c.kill()
		for _, o := range c.nodes {
			if o != victim {
				o.r.waitFor(t, o.name+" to declare "+victim.name+" dead", func() bool {
					return memberState(t, o.http, victim.name) == "dead"
				})
			}
		}
		restarted := time.Now()
		c.nodes[i] = c.launch(victim.name, c.seed, "--cluster-bind", victim.gossip, "--cluster-transport-bind", victim.transport)
		d, ok := c.converged(restarted, rejoinBound)
		report(t, fmt.Sprintf("%d nodes, same name and address after declared dead", n), d, ok, c)
	})
}

// TestRejoinOnANewPortBeforeDeclaredDead: a node SIGKILLed and restarted
// at once with the same name on new ports, before the others declare the
// old one dead: membership is identical within the bound, and the
// others' redials of the old address back off, their log lines
// rate-limited.
func TestRejoinOnANewPortBeforeDeclaredDead(t *testing.T) {
	eachRestart(t, func(t *testing.T, n int, c *rcluster) {
		before := c.count("transport: connection lost")
		victim, i := c.kill()
		restarted := time.Now()
		c.nodes[i] = c.launch(victim.name, c.seed)
		d, ok := c.converged(restarted, rejoinBound)
		report(t, fmt.Sprintf("%d nodes, same name on a new port before declared dead", n), d, ok, c)
		// The old address stays dialed until it is forgotten; give the
		// redials the time the issue counted (9 s) to show a loop.
		time.Sleep(max(0, 9*time.Second-time.Since(restarted)))
		lost := c.count("transport: connection lost") - before
		t.Logf("rejoin figure: %d nodes, new port: %d `transport: connection lost` lines in 9s", n, lost)
		// Each of the n-1 others lost its connection to the killed
		// node once; a few more per peer are redials of a flapping
		// link the rate limit lets through. The issue saw 180.
		if limit := 3 * (n - 1); lost > limit {
			t.Errorf("%d `transport: connection lost` lines in 9s, more than %d", lost, limit)
		}
	})
}

// TestRejoinSimultaneousStart: every node started at the same moment,
// either each given the first one's address as its seed, or each given
// every node's address (a StatefulSet's seed list, its own among them):
// membership is identical within the bound.
func TestRejoinSimultaneousStart(t *testing.T) {
	t.Parallel()
	defer http.DefaultClient.CloseIdleConnections()
	for _, n := range rejoinSizes() {
		for _, every := range []bool{false, true} {
			seeds := "one_seed"
			if every {
				seeds = "every_node_a_seed"
			}
			t.Run(fmt.Sprintf("%d_nodes_%s", n, seeds), func(t *testing.T) {
				c := newRCluster(t)
				addrs := make([]string, n)
				for i := range addrs {
					addrs[i] = freeAddr(t)
				}
				join := func(i int) string {
					switch {
					case every:
						return strings.Join(addrs, ",")
					case i == 0:
						return ""
					}
					return addrs[0]
				}
				began := time.Now()
				for i := range n {
					c.nodes = append(c.nodes, c.launch(fmt.Sprintf("n%d", i+1), join(i), "--cluster-bind", addrs[i]))
				}
				d, ok := c.converged(began, rejoinBound)
				report(t, fmt.Sprintf("%d nodes started at once, %s", n, seeds), d, ok, c)
			})
		}
	}
}

// freeAddr returns a 127.0.0.1 address whose port was free for TCP and
// UDP both (memberlist binds both), for a listener a test must name before
// it starts. The port is below the kernel's ephemeral range: it stays free
// between this check and the runner's bind, where a port the kernel handed
// out to a :0 listen could go to another runner's transport or HTTP
// listener meanwhile (CI: n3's "bind: address already in use" on the port
// n2's transport had got).
func freeAddr(t *testing.T) string {
	t.Helper()
	low := ephemeralLow()
	for range 200 {
		port := 10000 + rand.IntN(low-10000)
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		l, err := net.Listen("tcp", addr)
		if err != nil {
			continue
		}
		u, err := net.ListenPacket("udp", addr)
		l.Close()
		if err == nil {
			u.Close()
			return addr
		}
	}
	t.Fatal("no port free for TCP and UDP on 127.0.0.1")
	return ""
}

// ephemeralLow is the first port of the kernel's ephemeral range (Linux's
// ip_local_port_range; 32768, its default, where it cannot be read).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if f := strings.Fields(string(b)); err == nil && len(f) == 2 {
		if n, err := strconv.Atoi(f[0]); err == nil && n > 11000 {
			return n
		}
	}
	return 32768
}

package lua

import (
	"log/slog"
	"testing"

	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/remote"
)

// otherNode connects h's node and a second one, "other", over an
// in-memory network with opts, and returns the second; both transports
// and the network close with the test.
func otherNode(t *testing.T, h *harness, opts remote.MemOptions) *process.Node {
	t.Helper()
	net := remote.NewMemNetwork(opts)
	t.Cleanup(net.Close)
	quiet := slog.New(slog.DiscardHandler)
	tr, err := remote.New(h.Node, net.Endpoint(h.Node.Name()), remote.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tr.Close() })
	other := process.NewNode(process.Options{Name: "other", Logger: quiet})
	otr, err := remote.New(other, net.Endpoint("other"), remote.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = otr.Close() })
	return other
}

// A send or an ask to another node of a message larger than the network's
// frames is an operational failure the script sees: nil, limit: …, found
// before the whole message is encoded.
func TestRemoteSendTooLarge(t *testing.T) {
	h := newHarness(t)
	other := otherNode(t, h, remote.MemOptions{MaxFrame: 1 << 20})
	sink, err := other.SpawnFunc(func(p *process.Proc) (any, error) {
		<-p.Context().Done()
		return nil, nil
	}, process.SpawnOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = other.Kill(sink) })
	h.Check(h.Entry("big", `
return { main = function(to)
  local big = string.rep("x", 2 * 1024 * 1024)
  local ok, err = process.send(to, "big", big)
  assert(ok == nil and err.kind == "limit", tostring(err))
  assert(tostring(err):find("^limit: "), tostring(err))
  local t = {}
  for i = 1, 100000 do t[i] = "0123456789abcdef" end
  local v, aerr = process.ask(to, "big", t, "5s")
  assert(v == nil and aerr.kind == "limit", tostring(aerr))
  assert(process.send(to, "small", "ok"))
  return "ok"
end }`), sink.String())
}

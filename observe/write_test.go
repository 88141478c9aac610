package observe

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/proctor-run/proctor/internal/testutil"
	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/value"
)

const testToken = "0123456789abcdef0123"

// msgNode is a node with a dead-letter sink and a few processes to message.
type msgNode struct {
	node *process.Node
	dead *DeadLetters
	h    http.Handler
	got  chan process.Message // what "app:sink" received
}

// behavior adapts a function to process.Behavior.
type behavior func(c process.Context, m process.Message)

func (f behavior) Receive(c process.Context, m process.Message) { f(c, m) }

func newMsgNode(t *testing.T, token string) *msgNode {
	t.Helper()
	mn := &msgNode{got: make(chan process.Message, 16)}
	mn.dead = NewDeadLetters(DeadLetterOptions{Logger: slog.New(slog.DiscardHandler), LogEvery: time.Hour})
	mn.node = process.NewNode(process.Options{Name: "n1", Logger: slog.New(slog.DiscardHandler), DeadLetters: mn.dead})
	spawn := func(name string, b process.Behavior) {
		pid, err := mn.node.Spawn(b, process.SpawnOptions{Name: name})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { mn.node.Kill(pid) })
	}
	// app:sink keeps what it gets and answers its sender, as a script
	// that replies with process.send(msg:from(), …) does.
	spawn("app:sink", behavior(func(c process.Context, m process.Message) {
		mn.got <- m
		c.Node().Send(m.From, process.Message{From: c.Self(), Topic: "thanks"})
	}))
	spawn("app:echo", behavior(func(c process.Context, m process.Message) { c.Reply(&m, m.Payload, nil) }))
	spawn("app:refuse", behavior(func(c process.Context, m process.Message) {
		c.Reply(&m, nil, value.NewError(value.KindInvalid, "no thanks"))
	}))
	// app:big answers with what the payload's number of bytes is.
	spawn("app:big", behavior(func(c process.Context, m process.Message) {
		n, _ := m.Payload.(float64)
		c.Reply(&m, strings.Repeat("x", int(n)), nil)
	}))
	// app:bigtable answers with a table of that many entries, and
	// app:bigerror with an error whose details are one.
	table := func(m process.Message) map[any]any {
		n, _ := m.Payload.(float64)
		t := map[any]any{}
		for i := range int(n) {
			t[float64(i)] = "0123456789"
		}
		return t
	}
	spawn("app:bigtable", behavior(func(c process.Context, m process.Message) { c.Reply(&m, []any{table(m)}, nil) }))
	spawn("app:bigerror", behavior(func(c process.Context, m process.Message) {
		c.Reply(&m, nil, &value.Error{Kind: value.KindInvalid, Message: "no", Details: table(m)})
	}))
	// app:slow never answers.
	spawn("app:slow", behavior(func(process.Context, process.Message) {}))
	t.Cleanup(mn.dead.Close)
	mn.h = Handler(Options{Runtime: &fakeSource{}, Health: NewHealth(), Metrics: prometheus.NewRegistry(), Logger: slog.New(slog.DiscardHandler),
		Ops: Ops{Node: mn.node, DeadLetters: mn.dead, Token: token, MaxRequestBytes: 4096, MaxReplyBytes: 8192}})
	return mn
}

func post(t *testing.T, h http.Handler, path, auth, ctype, body string) (int, map[string]any, http.Header) {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	b, _ := io.ReadAll(rec.Body)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: answer %d is not a JSON object: %q", path, rec.Code, b)
	}
	return rec.Code, m, rec.Header()
}

func TestWriteEndpointsOffWithoutToken(t *testing.T) {
	mn := newMsgNode(t, "")
	for _, path := range []string{"/v1/send", "/v1/ask"} {
		code, m, hdr := post(t, mn.h, path, "Bearer "+testToken, "application/json", `{"dest":"app:sink","topic":"x"}`)
		if allow, ok := hdr["Allow"]; code != http.StatusMethodNotAllowed || !strings.Contains(m["error"].(string), "--http-token-file") || !ok || allow[0] != "" {
			t.Fatalf("%s without a token: %d %v", path, code, m)
		}
	}
	select {
	case m := <-mn.got:
		t.Fatalf("delivered %v", m)
	default:
	}
}

func TestWriteEndpointsNeedTheToken(t *testing.T) {
	mn := newMsgNode(t, testToken)
	for _, auth := range []string{"", "Bearer", "Bearer wrong-token-of-some-length", "Basic " + testToken, "Bearer " + testToken + "x", testToken} {
		code, m, hdr := post(t, mn.h, "/v1/send", auth, "application/json", `{"dest":"app:sink","topic":"x"}`)
		if code != http.StatusUnauthorized || m["error"] == "" || !strings.HasPrefix(hdr.Get("WWW-Authenticate"), "Bearer") {
			t.Fatalf("auth %q: %d %v", auth, code, m)
		}
	}
	if code, m, _ := post(t, mn.h, "/v1/send", "bearer "+testToken, "application/json", `{"dest":"app:sink","topic":"x"}`); code != 200 {
		t.Fatalf("the scheme is case-insensitive: %d %v", code, m)
	}
}

func TestWriteRequestsAreValidated(t *testing.T) {
	mn := newMsgNode(t, testToken)
	deep := strings.Repeat("[", value.MaxDepth+2) + strings.Repeat("]", value.MaxDepth+2)
	tests := []struct {
		name, path, ctype, body string
		code                    int
		want                    string
	}{
		{"not JSON", "/v1/send", "application/json", `{"dest":`, 400, "request body"},
		{"unknown field", "/v1/send", "application/json", `{"dest":"app:sink","topic":"x","sender":"me"}`, 400, "unknown field"},
		{"two objects", "/v1/send", "application/json", `{"dest":"app:sink","topic":"x"}{}`, 400, "one JSON object"},
		{"no dest", "/v1/send", "application/json", `{"topic":"x"}`, 400, "dest: required"},
		{"dest with a space", "/v1/send", "application/json", `{"dest":"app sink","topic":"x"}`, 400, "spaces"},
		{"bad pid", "/v1/send", "application/json", `{"dest":"<n1.x.1>","topic":"x"}`, 400, "invalid pid"},
		{"name@ without node", "/v1/send", "application/json", `{"dest":"app:sink@","topic":"x"}`, 400, "name@node"},
		{"long dest", "/v1/send", "application/json", `{"dest":"` + strings.Repeat("a", maxDestLen+1) + `","topic":"x"}`, 400, "longer than"},
		{"no topic", "/v1/send", "application/json", `{"dest":"app:sink"}`, 400, "topic: required"},
		{"long topic", "/v1/send", "application/json", `{"dest":"app:sink","topic":"` + strings.Repeat("t", maxTopicLen+1) + `"}`, 400, "topic: longer"},
		{"too deep", "/v1/send", "application/json", `{"dest":"app:sink","topic":"x","payload":` + deep + `}`, 400, "nested deeper"},
		{"too large", "/v1/send", "application/json", `{"dest":"app:sink","topic":"x","payload":"` + strings.Repeat("x", 5000) + `"}`, 413, "larger than 4096"},
		{"form body", "/v1/send", "application/x-www-form-urlencoded", `dest=app:sink`, 415, "application/json"},
		{"timeout on a send", "/v1/send", "application/json", `{"dest":"app:sink","topic":"x","timeout":"1s"}`, 400, "only an ask"},
		{"zero timeout", "/v1/ask", "application/json", `{"dest":"app:echo","topic":"x","timeout":"0s"}`, 400, "timeout"},
		{"long timeout", "/v1/ask", "application/json", `{"dest":"app:echo","topic":"x","timeout":"2h"}`, 400, "at most 1m0s"},
		{"duplicate key", "/v1/send", "application/json", `{"dest":"app:sink","dest":"app:echo","topic":"x"}`, 400, `duplicate key "dest"`},
		{"duplicate key in an ask", "/v1/ask", "application/json", `{"dest":"app:echo","topic":"x","topic":"y"}`, 400, `duplicate key "topic"`},
		{"duplicate key in the payload", "/v1/send", "application/json", `{"dest":"app:sink","topic":"x","payload":[{"a":1},{"b":1,"b":2}]}`, 400, `duplicate key "payload[1].b"`},
		{"bad timeout", "/v1/ask", "application/json", `{"dest":"app:echo","topic":"x","timeout":"soon"}`, 400, "timeout"},
		{"a timeout in words", "/v1/ask", "application/json", `{"dest":"app:echo","topic":"x","timeout":"5 seconds"}`, 400, `timeout "5 seconds": not a duration: write a Go duration such as "5s"`},
		{"a timeout of another type", "/v1/ask", "application/json", `{"dest":"app:echo","topic":"x","timeout":[1]}`, 400, "timeout: want a Go duration string"},
		{"a body that is no object", "/v1/send", "application/json", `[1,2]`, 400, "want one JSON object"},
		{"a dest of another type", "/v1/send", "application/json", `{"dest":5,"topic":"x"}`, 400, "dest: a JSON number is not what this field takes"},
		{"a boolean key", "/v1/send", "application/json", `{"dest":"app:sink","topic":"x","key":true}`, 400, "key: want a string or a number"},
		// Field names are matched exactly: encoding/json let "Dest" win
		// over "dest" past the duplicate-key check.
		{"a field in capitals", "/v1/send", "application/json", `{"dest":"app:sink","Dest":"app:echo","topic":"x"}`, 400, `unknown field "Dest" (field names are matched exactly`},
		{"TOPIC", "/v1/send", "application/json", `{"dest":"app:sink","topic":"x","TOPIC":"y"}`, 400, `unknown field "TOPIC"`},
		{"Payload", "/v1/send", "application/json", `{"dest":"app:sink","topic":"x","Payload":1}`, 400, `unknown field "Payload"`},
		{"TimeOut", "/v1/ask", "application/json", `{"dest":"app:echo","topic":"x","TimeOut":"1s"}`, 400, `unknown field "TimeOut"`},
		// What encoding/json would change into U+FFFD is refused, as
		// json.decode refuses it.
		{"raw bytes that are not UTF-8", "/v1/send", "application/json", "{\"dest\":\"app:sink\",\"topic\":\"x\",\"payload\":\"\xff\xfe\"}", 400, "at offset 42: invalid UTF-8"},
		{"a lone surrogate", "/v1/send", "application/json", `{"dest":"app:sink","topic":"x","payload":"\ud800"}`, 400, `lone UTF-16 surrogate \ud800`},
		{"a lone low surrogate in the topic", "/v1/send", "application/json", `{"dest":"app:sink","topic":"\udc00"}`, 400, "lone UTF-16 surrogate"},
		{"a number JSON cannot hold", "/v1/send", "application/json", `{"dest":"app:sink","topic":"x","payload":1e999}`, 400, "payload"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, m, _ := post(t, mn.h, tt.path, "Bearer "+testToken, tt.ctype, tt.body)
			if code != tt.code || !strings.Contains(m["error"].(string), tt.want) {
				t.Fatalf("%d %v; want %d with %q", code, m, tt.code, tt.want)
			}
		})
	}
	select {
	case m := <-mn.got:
		t.Fatalf("a bad request delivered %v", m)
	default:
	}
}

func TestSend(t *testing.T) {
	mn := newMsgNode(t, testToken)
	auth := "Bearer " + testToken
	code, m, _ := post(t, mn.h, "/v1/send", auth, "application/json; charset=utf-8", `{"dest":"app:sink","topic":"hello","payload":{"n":1,"list":[true,null,"s"]}}`)
	if code != 200 || m["status"] != "sent" {
		t.Fatalf("%d %v", code, m)
	}
	got := <-mn.got
	want := map[string]any{"n": 1.0, "list": []any{true, nil, "s"}}
	if got.Topic != "hello" || !sameJSON(got.Payload, want) {
		t.Fatalf("delivered %q %#v", got.Topic, got.Payload)
	}
	// The sender is the endpoint's own system process, alive so that the
	// sink's answer reaches it rather than the dead letters.
	if !mn.node.IsSystem(got.From) || m["from"] != got.From.String() {
		t.Fatalf("sender %s (system %v), answer says %v", got.From, mn.node.IsSystem(got.From), m["from"])
	}
	// By PID and by name@node (this node) too; a second send has the same sender.
	sink, _ := mn.node.Whereis("app:sink")
	for _, dest := range []string{sink.String(), "app:sink@n1"} {
		if code, m, _ := post(t, mn.h, "/v1/send", auth, "", `{"dest":"`+dest+`","topic":"again"}`); code != 200 {
			t.Fatalf("%s: %d %v", dest, code, m)
		}
		if again := <-mn.got; again.From != got.From || again.Payload != nil {
			t.Fatalf("%s: %+v", dest, again)
		}
	}
	testutil.Eventually(t, "the sink's answers drained", func() bool {
		mb, _ := mn.node.Mailbox(got.From)
		return mb.Len == 0
	})
	if c := mn.dead.Counts(); c["no_process"] != 0 {
		t.Fatalf("answers to the endpoint were dead letters: %v", c)
	}

	// Unknown destinations: 404 or 502, and a dead letter each.
	for _, tt := range []struct {
		dest string
		code int
		kind string
	}{
		{"app:nobody", 404, "name_not_found"},
		{"<n1.999.1>", 404, "no_process"},
		{"app:sink@elsewhere", 502, "unreachable"},
	} {
		code, m, _ := post(t, mn.h, "/v1/send", auth, "", `{"dest":"`+tt.dest+`","topic":"lost"}`)
		if code != tt.code || m["error"] == "" {
			t.Fatalf("%s: %d %v", tt.dest, code, m)
		}
		if c := mn.dead.Counts(); c[tt.kind] != 1 {
			t.Fatalf("%s: dead letters %v", tt.dest, c)
		}
	}
	// The endpoint's process is restarted if something killed it.
	mn.node.Kill(got.From)
	if code, m, _ := post(t, mn.h, "/v1/send", auth, "", `{"dest":"app:sink","topic":"after"}`); code != 200 || m["from"] == got.From.String() {
		t.Fatalf("after its process was killed: %d %v", code, m)
	}
	<-mn.got
}

func sameJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

func TestAsk(t *testing.T) {
	mn := newMsgNode(t, testToken)
	auth := "Bearer " + testToken
	echo, _ := mn.node.Whereis("app:echo")

	code, m, _ := post(t, mn.h, "/v1/ask", auth, "", `{"dest":"app:echo","topic":"q","payload":[1,{"a":"b"}]}`)
	if code != 200 || !sameJSON(m["reply"], []any{1.0, map[string]any{"a": "b"}}) || m["from"] != echo.String() {
		t.Fatalf("%d %v", code, m)
	}
	// A reply that is an error comes back as one.
	code, m, _ = post(t, mn.h, "/v1/ask", auth, "", `{"dest":"app:refuse","topic":"q"}`)
	if e, _ := m["error"].(map[string]any); code != 200 || e["kind"] != "invalid" || e["message"] != "no thanks" {
		t.Fatalf("rejected: %d %v", code, m)
	}
	// No reply in time: 504; the reply that comes later is a dead letter.
	start := time.Now()
	code, m, _ = post(t, mn.h, "/v1/ask", auth, "", `{"dest":"app:slow","topic":"q","timeout":"50ms"}`)
	if code != http.StatusGatewayTimeout || m["kind"] != "timeout" || time.Since(start) > 5*time.Second {
		t.Fatalf("timeout: %d %v", code, m)
	}
	// A timeout may be milliseconds, as a script's are.
	code, m, _ = post(t, mn.h, "/v1/ask", auth, "", `{"dest":"app:slow","topic":"q","timeout":50}`)
	if code != http.StatusGatewayTimeout || m["kind"] != "timeout" || !strings.Contains(m["error"].(string), "no reply within 50ms") {
		t.Fatalf("a timeout in milliseconds: %d %v", code, m)
	}
	// A reply whose JSON passes MaxReplyBytes is refused, one below it
	// answered.
	if code, m, _ := post(t, mn.h, "/v1/ask", auth, "", `{"dest":"app:big","topic":"q","payload":8000}`); code != 200 || len(m["reply"].(string)) != 8000 {
		t.Fatalf("a reply within the bound: %d", code)
	}
	if code, m, _ := post(t, mn.h, "/v1/ask", auth, "", `{"dest":"app:big","topic":"q","payload":100000}`); code != http.StatusBadGateway || !strings.Contains(m["error"].(string), "too large") {
		t.Fatalf("a reply past the bound: %d %v", code, m)
	}
	for _, dest := range []string{"app:bigtable", "app:bigerror"} {
		if code, m, _ := post(t, mn.h, "/v1/ask", auth, "", `{"dest":"`+dest+`","topic":"q","payload":10}`); code != 200 {
			t.Fatalf("%s within the bound: %d %v", dest, code, m)
		}
		if code, m, _ := post(t, mn.h, "/v1/ask", auth, "", `{"dest":"`+dest+`","topic":"q","payload":5000}`); code != http.StatusBadGateway || !strings.Contains(m["error"].(string), "too large") {
			t.Fatalf("%s past the bound: %d %v", dest, code, m)
		}
	}
	// A reply JSON cannot carry as it is (NaN, an infinity, bytes that are
	// not UTF-8) is an error reply saying so, never changed (a reply
	// "\255\254" came back as "\ufffd\ufffd", math.huge as
	// 1.7976931348623157e+308) and never a 502.
	for name, reply := range map[string]any{
		"nan":      map[string]any{"a": math.NaN()},
		"inf":      map[string]any{"a": math.Inf(1)},
		"bytes":    "\xff\xfe",
		"key":      map[string]any{"\xff": 1.0},
		"errbytes": &value.Error{Kind: value.KindInvalid, Message: "\xff"},
	} {
		pid, err := mn.node.Spawn(behavior(func(c process.Context, m process.Message) {
			if e, ok := reply.(*value.Error); ok {
				c.Reply(&m, nil, e)
				return
			}
			c.Reply(&m, reply, nil)
		}), process.SpawnOptions{})
		if err != nil {
			t.Fatal(err)
		}
		code, m, _ := post(t, mn.h, "/v1/ask", auth, "", `{"dest":"`+pid.String()+`","topic":"q"}`)
		e, _ := m["error"].(map[string]any)
		if code != 200 || e["kind"] != "invalid" || !strings.Contains(e["message"].(string), "has no JSON form") || m["reply"] != nil || m["from"] != pid.String() {
			t.Fatalf("%s: %d %v", name, code, m)
		}
		mn.node.Kill(pid)
	}
	// Unknown: 404 at once.
	if code, m, _ := post(t, mn.h, "/v1/ask", auth, "", `{"dest":"app:nobody","topic":"q"}`); code != 404 {
		t.Fatalf("unknown: %d %v", code, m)
	}
}

func TestAskLateReplyIsADeadLetter(t *testing.T) {
	mn := newMsgNode(t, testToken)
	held := make(chan process.Message, 1)
	pid, err := mn.node.Spawn(behavior(func(c process.Context, m process.Message) { held <- m }), process.SpawnOptions{Name: "app:late"})
	if err != nil {
		t.Fatal(err)
	}
	defer mn.node.Kill(pid)
	if code, m, _ := post(t, mn.h, "/v1/ask", "Bearer "+testToken, "", `{"dest":"app:late","topic":"q","timeout":"20ms"}`); code != 504 {
		t.Fatalf("%d %v", code, m)
	}
	m := <-held
	if settled, _ := mn.node.Reply(&m, pid, "too late", nil); settled {
		t.Fatal("a late reply settled the ask")
	}
	if c := mn.dead.Counts(); c["late_reply"] != 1 {
		t.Fatalf("dead letters %v", c)
	}
}

// A client that goes away while its ask waits frees the handler at once.
func TestAskClientGone(t *testing.T) {
	mn := newMsgNode(t, testToken)
	ctx, cancel := context.WithCancel(context.Background())
	req := httptest.NewRequest(http.MethodPost, "/v1/ask", strings.NewReader(`{"dest":"app:slow","topic":"q","timeout":"30s"}`)).WithContext(ctx)
	req.Header.Set("Authorization", "Bearer "+testToken)
	var wg sync.WaitGroup
	wg.Add(1)
	start := time.Now()
	go func() {
		defer wg.Done()
		mn.h.ServeHTTP(httptest.NewRecorder(), req)
	}()
	time.Sleep(20 * time.Millisecond)
	cancel()
	wg.Wait()
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("the handler waited %s after its client left", d)
	}
}

func TestWriteWithoutNode(t *testing.T) {
	h := Handler(Options{Runtime: &fakeSource{}, Health: NewHealth(), Metrics: prometheus.NewRegistry(), Logger: slog.New(slog.DiscardHandler), Ops: Ops{Token: testToken}})
	if code, m, _ := post(t, h, "/v1/send", "Bearer "+testToken, "", `{"dest":"x","topic":"y"}`); code != 503 {
		t.Fatalf("%d %v", code, m)
	}
}

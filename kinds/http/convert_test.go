package http

import (
	"encoding/json"
	"fmt"
	"math"
	nethttp "net/http"
	"net/http/httptest"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	glua "github.com/yuin/gopher-lua"

	"github.com/proctor-run/proctor/lua"
	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
	"github.com/proctor-run/proctor/value"
)

func TestStatusOf(t *testing.T) {
	cases := []struct {
		err  error
		want int
	}{
		{value.NewError(value.KindInvalid, "x"), 400},
		{value.NewError(value.KindNotFound, "x"), 404},
		{value.NewError(value.KindLimit, "x"), 429},
		{process.ErrMailboxFull, 429},
		{value.NewError(value.KindTimeout, "x"), 504},
		{value.NewError(value.KindStopped, "x"), 503},
		{process.ErrNoConnection, 503},
		{process.ErrNameNotFound, 503},
		{registry.ErrNotRunning, 503},
		{value.NewError(value.KindAggregate, "x"), 500},
		{value.NewError(value.KindInternal, "x"), 500},
	}
	for _, c := range cases {
		if got := StatusOf(c.err); got != c.want {
			t.Errorf("%v (%s): %d, want %d", c.err, value.KindOf(c.err), got, c.want)
		}
	}
}

// A target that cannot be reached is a 503 whose body's kind says so:
// stopped, or noconnection for a node that cannot be reached; never the
// not_found of the name lookup that found no process, which the status
// table maps to 404. Other kinds keep their own.
func TestUnavailableBodyKindMatchesStatus(t *testing.T) {
	cases := []struct {
		err    error
		status int
		kind   string
	}{
		{fmt.Errorf("route app:r: app:api: %w", process.ErrNameNotFound), 503, "stopped"},
		{fmt.Errorf("ask: %w", process.ErrNoProcess), 503, "stopped"},
		{fmt.Errorf("route app:r: app:api: %w", registry.ErrNotRunning), 503, "stopped"},
		{fmt.Errorf("send: %w", process.ErrUnreachable), 503, "noconnection"},
		{process.ErrNoConnection, 503, "noconnection"},
		{value.NewError(value.KindNotFound, "no user 7"), 404, "not_found"},
	}
	for _, c := range cases {
		r := ErrorResponse(c.err)
		var b errorBody
		if err := json.Unmarshal([]byte(r.Body), &b); err != nil {
			t.Fatal(err)
		}
		if r.Status != c.status || b.Error.Kind != c.kind || b.Error.Message != c.err.Error() {
			t.Errorf("%v: %d %+v, want %d with kind %s and the message", c.err, r.Status, b.Error, c.status, c.kind)
		}
	}
}

func TestErrorResponseHasNoTraceback(t *testing.T) {
	r := ErrorResponse(value.NewError(value.KindInternal, "echo.lua:3: boom\nstack traceback:\n\t[G]: in function 'error'"))
	var b struct {
		Error struct{ Kind, Message string }
	}
	if err := json.Unmarshal([]byte(r.Body), &b); err != nil {
		t.Fatal(err)
	}
	if b.Error.Message != "echo.lua:3: boom" || b.Error.Kind != "internal" {
		t.Errorf("%+v", b)
	}
}

func TestReplyResponse(t *testing.T) {
	cases := []struct {
		reply  any
		status int
		ctype  string
		body   string
		err    string
	}{
		{"hi", 200, "text/plain; charset=utf-8", "hi", ""},
		{map[string]any{"status": 201.0, "body": map[string]any{"a": 1.0}}, 201, "application/json", "{\"a\":1}\n", ""},
		{map[string]any{"body": []any{"x"}, "headers": map[string]any{"content-type": "application/x"}}, 200, "application/x", "[\"x\"]\n", ""},
		{map[string]any{}, 200, "", "", ""},
		{map[string]any{"status": 99.0}, 0, "", "", "status 99"},
		{map[string]any{"status": 200.5}, 0, "", "", "status 200.5"},
		{map[string]any{"headers": map[string]any{"x": "a\r\nb"}}, 0, "", "", "line break"},
		{map[string]any{"headers": map[string]any{"bad name": "a"}}, 0, "", "", "no header name"},
		{map[string]any{"headers": map[string]any{"x": math.Inf(1)}}, 0, "", "", "header X is +Inf"},
		{map[string]any{"headers": map[string]any{"x": math.Inf(-1)}}, 0, "", "", "header X is -Inf"},
		{map[string]any{"headers": map[string]any{"x": math.NaN()}}, 0, "", "", "header X is NaN"},
		{map[string]any{"headers": map[string]any{"content-length": "1"}}, 0, "", "", "server sets itself"},
		{map[string]any{"stauts": 200.0}, 0, "", "", "besides status"},
		{42.0, 0, "", "", "replied with a number"},
		{nil, 0, "", "", "replied with nil"},
	}
	for _, c := range cases {
		// A Lua handler's table reaches a route as a value.Record (its
		// ask takes one): the same response, or the same error.
		for _, reply := range []any{c.reply, asRecord(c.reply)} {
			r, err := ReplyResponse(reply)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) || value.KindOf(err) != value.KindInternal {
					t.Errorf("%#v: %v, want %q", reply, err, c.err)
				}
				continue
			}
			if err != nil || r.Status != c.status || r.Header.Get("Content-Type") != c.ctype || r.Body != c.body {
				t.Errorf("%#v: %+v %v", reply, r, err)
			}
		}
	}
}

// TestRecordReplyNameTwice: a Record naming a field twice (Go's, not a
// Lua table's) has a field besides status, headers and body, as when
// each name was looked up.
func TestRecordReplyNameTwice(t *testing.T) {
	r := &value.Fields{{Key: "status", Value: 200.0}, {Key: "body", Value: "a"}, {Key: "status", Value: 201.0}}
	if _, err := ReplyResponse(r); err == nil || !strings.Contains(err.Error(), "besides status") {
		t.Errorf("%v, want the fields-besides error", err)
	}
}

// asRecord is v with each map[string]any in it a value.Record.
func asRecord(v any) any {
	switch x := v.(type) {
	case map[string]any:
		r := &value.Fields{}
		for k, e := range x {
			*r = append(*r, value.Field{Key: k, Value: asRecord(e)})
		}
		return r
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = asRecord(e)
		}
		return out
	}
	return v
}

// FuzzRequestPayload: whatever a client sends, the payload is a value
// that may cross a process boundary, with lower-case header names, or
// an invalid error.
func FuzzRequestPayload(f *testing.F) {
	f.Add("/users/7", "a=1&a=2", "X-A", "v", "body")
	f.Add("/users/%00", "%zz", "x", "", "")
	f.Add("/users/..%2f", strings.Repeat("a&", 1200), "X", "\xff", "\x00")
	f.Fuzz(func(t *testing.T, path, query, hname, hval, body string) {
		req := httptest.NewRequest("GET", "http://x/", nil)
		req.URL.Path, req.URL.RawQuery = path, query
		req.Header[hname] = []string{hval}
		req.SetPathValue("id", path)
		p, err := RequestPayload(req, body, []string{"id"}, &KeySpec{Source: KeyPath, Name: "id"})
		if err != nil {
			if value.KindOf(err) != value.KindInvalid {
				t.Fatalf("error of kind %s: %v", value.KindOf(err), err)
			}
			return
		}
		c, err := value.Copy(p)
		if err != nil {
			t.Fatalf("payload cannot cross a process: %v", err)
		}
		m := c.(map[string]any)
		for k := range m["headers"].(map[string]any) {
			if k != strings.ToLower(k) {
				t.Fatalf("header %q not lower case", k)
			}
		}
		if m["body"] != body {
			t.Fatalf("body changed")
		}
	})
}

// FuzzReplyResponse: whatever a handler replies, the response is well
// formed (a status from 200 to 599, headers without line breaks) or an
// internal error; and its error response is JSON without a line break
// in the message.
func FuzzReplyResponse(f *testing.F) {
	f.Add(200.0, "x-a", "v", "body", true)
	f.Add(600.0, "bad name", "a\nb", "", false)
	f.Add(-1.0, "Content-Length", "9", "\xff", true)
	f.Fuzz(func(t *testing.T, status float64, hname, hval, body string, tableBody bool) {
		var b any = body
		if tableBody {
			b = map[any]any{body: status, 1.0: []any{hval}}
		}
		reply := map[string]any{"status": status, "headers": map[string]any{hname: hval}, "body": b}
		r, err := ReplyResponse(reply)
		rr, rerr := ReplyResponse(asRecord(reply))
		if (err == nil) != (rerr == nil) || err == nil && (rr.Status != r.Status || rr.Body != r.Body || !reflect.DeepEqual(rr.Header, r.Header)) {
			t.Fatalf("as a Record: %+v, %v; as a map: %+v, %v", rr, rerr, r, err)
		}
		if err != nil {
			if value.KindOf(err) != value.KindInternal {
				t.Fatalf("kind %s: %v", value.KindOf(err), err)
			}
			er := ErrorResponse(err)
			var eb errorBody
			if json.Unmarshal([]byte(er.Body), &eb) != nil || strings.ContainsAny(eb.Error.Message, "\r\n") || !utf8.ValidString(eb.Error.Message) {
				t.Fatalf("error body %q", er.Body)
			}
			return
		}
		if r.Status < 200 || r.Status > 599 {
			t.Fatalf("status %d", r.Status)
		}
		for k, vs := range r.Header {
			for _, v := range vs {
				if strings.ContainsAny(k+v, "\r\n\x00") {
					t.Fatalf("header %q: %q", k, v)
				}
			}
		}
		w := httptest.NewRecorder()
		r.write(w)
		if w.Code != r.Status || w.Body.Len() != len(r.Body) {
			t.Fatalf("written %d %d", w.Code, w.Body.Len())
		}
		_ = nethttp.StatusText(r.Status)
	})
}

// TestHeaderNameTables: the tables of common names give what net/http's
// canonical form and strings.ToLower give, for every name in them.
func TestHeaderNameTables(t *testing.T) {
	for _, n := range commonNames {
		l, c := strings.ToLower(n), nethttp.CanonicalHeaderKey(n)
		if got := lowerName(c); got != l {
			t.Errorf("lowerName(%q) = %q, want %q", c, got, l)
		}
		if got := canonicalName(l); got != c {
			t.Errorf("canonicalName(%q) = %q, want %q", l, got, c)
		}
	}
	if got := canonicalName("x-echo"); got != "X-Echo" {
		t.Errorf("canonicalName(x-echo) = %q", got)
	}
}

// TestReplyIntoAllocations: reading a reply {status, headers, body} into
// the connection's header map allocates each header's value slice (and,
// for a name outside the common table, its canonical form), not a box
// of each header's name.
func TestReplyIntoAllocations(t *testing.T) {
	reply := map[string]any{"status": 200.0, "headers": map[string]any{"x-echo": "yes", "cache-control": "no-store"}, "body": "hello"}
	a := testing.AllocsPerRun(200, func() {
		h := nethttp.Header{}
		if _, err := replyInto(reply, h); err != nil {
			t.Fatal(err)
		}
	})
	// Two value slices and "X-Echo" (h does not escape: its map is on the
	// stack).
	if a > 3 {
		t.Errorf("%.0f allocations, want at most 3", a)
	}
	// As much for the reply as a Record.
	rec := asRecord(reply)
	if a := testing.AllocsPerRun(200, func() {
		if _, err := replyInto(rec, nethttp.Header{}); err != nil {
			t.Fatal(err)
		}
	}); a > 3 {
		t.Errorf("as a Record: %.0f allocations, want at most 3", a)
	}
}

// TestRequestPayloadAllocations: a request's payload allocates its maps
// and boxes the values that are the request's own (path, header values,
// remote address, body, the path's wildcards); a standard method is a
// constant.
func TestRequestPayloadAllocations(t *testing.T) {
	r := httptest.NewRequest("POST", "/users/7", nil)
	r.Header.Set("Content-Type", "text/plain")
	r.SetPathValue("id", "7")
	a := testing.AllocsPerRun(200, func() {
		if _, err := RequestPayload(r, "hello", []string{"id"}, nil); err != nil {
			t.Fatal(err)
		}
	})
	// The payload's fields and records are one allocation; the boxes of
	// path, remote, the wildcard, the header and the host a second
	// (stringBoxes), the body's box the third (13 when the payload was
	// made of Go maps, 7 with a box each).
	if a > 3 {
		t.Errorf("%.0f allocations, want at most 3", a)
	}
}

// TestStringBoxes: a box made in the block holds its string, and keeps
// holding it as more are added; past the block's room a string is boxed
// on its own.
func TestStringBoxes(t *testing.T) {
	sb := newStringBoxes(2)
	a, b := sb.box("first"), sb.box(strings.Repeat("x", 3))
	c := sb.box("past the room")
	for _, tc := range []struct {
		v    any
		want string
	}{{a, "first"}, {b, "xxx"}, {c, "past the room"}} {
		if s, ok := tc.v.(string); !ok || s != tc.want {
			t.Errorf("box = %#v, want %q", tc.v, tc.want)
		}
	}
	if a == b || a != any("first") {
		t.Errorf("boxes compare wrong: %v %v", a, b)
	}
	if n := testing.AllocsPerRun(100, func() {
		sb := newStringBoxes(4)
		for range 4 {
			_ = sb.box("v")
		}
	}); n > 1 {
		t.Errorf("%.0f allocations for 4 boxes, want 1", n)
	}
}

// TestPayloadToLuaAllocations: from a request to the tables a Lua
// process reads, the payload costs its own allocations and one a table
// (payload, params, query, headers): no Go map in between (17 with the
// maps, 11 with a box for each string).
func TestPayloadToLuaAllocations(t *testing.T) {
	r := httptest.NewRequest("POST", "/users/7", nil)
	r.Header.Set("Content-Type", "text/plain")
	r.SetPathValue("id", "7")
	L := glua.NewState()
	defer L.Close()
	a := testing.AllocsPerRun(200, func() {
		p, err := RequestPayload(r, "hello", []string{"id"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := lua.ToLua(L, p); err != nil {
			t.Fatal(err)
		}
	})
	if a > 7 {
		t.Errorf("%.0f allocations, want at most 7", a)
	}
}

// TestPayloadToLuaBytes: the benchmark's request (five headers of
// net/http's client's, one wildcard, a 64-byte body) made into its payload
// and its Lua tables allocates at most 1,650 bytes: the payload's fields
// and the common header names go into the tables with the boxes they have
// (value.BoxedRecord), not one box a key in each table's block (1,936
// before), and the headers' values are places in the payload's
// stringBoxes (1,648 when each was an interface).
func TestPayloadToLuaBytes(t *testing.T) {
	r, body := echoRequest()
	L := glua.NewState()
	defer L.Close()
	got := bytesPerRun(200, func() {
		p, err := RequestPayload(r, body, []string{"what"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := lua.ToLua(L, p); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("%d bytes", got)
	if got > 1650 {
		t.Errorf("%d bytes a request, want at most 1650", got)
	}
}

// bytesPerRun is what f allocates a call: the least of three rounds of n
// calls (another test's goroutine allocating meanwhile only adds).
func bytesPerRun(n int, f func()) uint64 {
	least := uint64(math.MaxUint64)
	var ms runtime.MemStats
	for range 3 {
		runtime.ReadMemStats(&ms)
		before := ms.TotalAlloc
		for range n {
			f()
		}
		runtime.ReadMemStats(&ms)
		least = min(least, (ms.TotalAlloc-before)/uint64(n))
	}
	return least
}

// TestRequestPayloadFields: the payload holds every field of the
// contract, read as the map[string]any it stands for: lower-case header
// names, a header given twice joined, names that differ only in case one
// header, host from the request, a repeated query parameter a list, the
// path's wildcards, and the key when the route has one.
func TestRequestPayloadFields(t *testing.T) {
	r := httptest.NewRequest("PUT", "http://example.com/users/7?a=1&a=2&b=x", nil)
	r.Header = nethttp.Header{
		"Content-Type": {"text/plain"},
		"X-Many":       {"1", "2"},
		"X-Odd":        {"a"},
		"x-odd":        {"a"}, // not net/http's parser's: made by hand
		"Host":         {"wrong"},
	}
	r.RemoteAddr = "127.0.0.1:5000"
	r.SetPathValue("id", "7")
	p, err := RequestPayload(r, "hi", []string{"id", "none"}, &KeySpec{Source: KeyPath, Name: "id"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := value.Copy(p)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"method": "PUT", "path": "/users/7", "body": "hi", "remote": "127.0.0.1:5000", "key": "7",
		"params": map[string]any{"id": "7", "none": ""},
		"query":  map[string]any{"a": []any{"1", "2"}, "b": "x"},
		"headers": map[string]any{"content-type": "text/plain", "x-many": "1, 2", "x-odd": "a",
			"host": "example.com"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("payload\n%#v\nwant\n%#v", got, want)
	}
	// No query, no key: an empty table and no key field.
	r = httptest.NewRequest("GET", "/", nil)
	p, err = RequestPayload(r, "", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, _ = value.Copy(p)
	m := got.(map[string]any)
	if _, ok := m["key"]; ok || len(m["query"].(map[string]any)) != 0 || len(m["params"].(map[string]any)) != 0 || len(m) != 7 {
		t.Errorf("payload %#v", m)
	}
}

// TestLearnedNames: a reply's name not in canonical form is learned once
// (the next costs no allocation), at most maxLearned of them, and each
// gives net/http's canonical form whether learned or not.
func TestLearnedNames(t *testing.T) {
	for i := range maxLearned + 50 {
		n := fmt.Sprintf("x-learn-%d-name", i)
		for range 2 {
			if got, want := canonicalName(n), nethttp.CanonicalHeaderKey(n); got != want {
				t.Fatalf("canonicalName(%q) = %q, want %q", n, got, want)
			}
		}
	}
	if n := len(*replyNames.Load()); n > len(canonicalNames)+maxLearned {
		t.Errorf("%d names known, bound %d", n, len(canonicalNames)+maxLearned)
	}
	long := "x-" + strings.Repeat("a", maxLearnedName)
	if got := canonicalName(long); got != nethttp.CanonicalHeaderKey(long) {
		t.Errorf("long name: %q", got)
	}
	if _, ok := (*replyNames.Load())[long]; ok {
		t.Errorf("a name longer than %d bytes was learned", maxLearnedName)
	}
	if a := testing.AllocsPerRun(100, func() { _ = canonicalName("x-learn-0-name") }); a != 0 {
		t.Errorf("a learned name: %v allocations", a)
	}
}

// TestReplyHeadersShareOneSlice: the headers' values are as before, one
// slice each of its values, and appending to one does not touch another.
func TestReplyHeadersShareOneSlice(t *testing.T) {
	h := nethttp.Header{}
	err := replyHeaders(h, map[string]any{"x-a": "1", "x-b": 2.0, "x-c": []any{"3", "4"}, "X-D": "5"})
	if err != nil {
		t.Fatal(err)
	}
	want := nethttp.Header{"X-A": {"1"}, "X-B": {"2"}, "X-C": {"3", "4"}, "X-D": {"5"}}
	if !reflect.DeepEqual(h, want) {
		t.Fatalf("got %v, want %v", h, want)
	}
	for k := range h {
		h.Add(k, "more")
	}
	for k, vs := range want {
		if got := h[k]; len(got) != len(vs)+1 || !slices.Equal(got[:len(vs)], vs) || got[len(vs)] != "more" {
			t.Errorf("%s after Add: %q", k, got)
		}
	}
	// A name given twice in other cases is one header of both values.
	h = nethttp.Header{}
	if err := replyHeaders(h, map[any]any{"x-e": "1", "X-E": "2"}); err != nil {
		t.Fatal(err)
	}
	if got := h["X-E"]; len(got) != 2 {
		t.Errorf("X-E: %q", got)
	}
}

// TestControlAt: what strings.IndexFunc finds of ASCII control
// characters, in valid and invalid UTF-8.
func TestControlAt(t *testing.T) {
	for _, s := range []string{"", "/a/b", "/a\x00", "\x1f/", "/é\x7f", "/\xff\x01", "/\xe2\x82", "/日本\n", "/ok\x80"} {
		want := strings.IndexFunc(s, func(c rune) bool { return c < 0x20 || c == 0x7f })
		if got := controlAt(s, false); got != want {
			t.Errorf("controlAt(%q) = %d, want %d", s, got, want)
		}
	}
}

// TestRequestPayloadHeaderCounts: every header reaches the payload
// whatever room its block has for them (newPayload's sizes and past them).
func TestRequestPayloadHeaderCounts(t *testing.T) {
	for _, n := range []int{0, 3, 4, 5, 7, 8, 11, 12, 15, 16, 17, 40} {
		r := httptest.NewRequest("GET", "/x", nil)
		r.Header = nethttp.Header{}
		for i := range n {
			r.Header.Set(fmt.Sprintf("X-H%d", i), fmt.Sprint(i))
		}
		p, err := RequestPayload(r, "", nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		c, err := value.Copy(p)
		if err != nil {
			t.Fatal(err)
		}
		hs := c.(map[string]any)["headers"].(map[string]any)
		if len(hs) != n+1 || hs["host"] != "example.com" {
			t.Fatalf("%d headers: %v", n, hs)
		}
		for i := range n {
			if hs[fmt.Sprintf("x-h%d", i)] != fmt.Sprint(i) {
				t.Fatalf("%d headers: x-h%d is %v", n, i, hs[fmt.Sprintf("x-h%d", i)])
			}
		}
	}
}

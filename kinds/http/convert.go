package http

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	nethttp "net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"
	"unsafe"

	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
	"github.com/proctor-run/proctor/value"
)

// Topic is the topic of the asks a route sends.
const Topic = "http.request"

// Bounds of the conversions: what a request may bring into a payload and
// a reply may put in a response.
const (
	// MaxQueryParams is the most query parameters a request may carry
	// (more is 400).
	MaxQueryParams = 1000
	// MaxReplyHeaders is the most headers a reply may set.
	MaxReplyHeaders = 100
	// maxErrorMessage bounds the message of an error response.
	maxErrorMessage = 1024
)

// RequestPayload builds the payload of the ask for r: {method, path,
// params, query, headers, body, remote}, plus key when the route has one.
// Header names are lower case, and a header given several times is one
// value joined with ", " (RFC 9110 §5.3); a query parameter given several
// times is a list of its values, in order. params are the path's
// wildcards, by name. An invalid request (a control character in its
// path, too many parameters, a key it lacks) is an invalid error.
//
// The payload is a value.Record, the map[string]any of those fields
// without the maps: a Lua process makes its tables straight from it, and
// value.Copy gives the map.
func RequestPayload(r *nethttp.Request, body string, params []string, key *KeySpec) (value.Record, error) {
	path := r.URL.Path
	if bad := controlAt(path, false); bad >= 0 {
		return nil, value.NewError(value.KindInvalid, "the path holds a control character (0x%02x at offset %d)", path[bad], bad)
	}
	if !utf8.ValidString(path) {
		return nil, value.NewError(value.KindInvalid, "the path is not valid UTF-8")
	}
	if at, seg := dotSegment(path); at >= 0 {
		return nil, value.NewError(value.KindInvalid, "the path has a '%s' segment (at offset %d) once decoded", seg, at)
	}
	q, err := queryOf(r.URL.RawQuery)
	if err != nil {
		return nil, err
	}
	p, room := newPayload(len(r.Header) + 1) // host too
	// The path, the remote address, the params' and the headers' values
	// (and the host, and the key) boxed in one block; the body boxed on
	// its own (see stringBoxes).
	n := 2 + len(params) + len(r.Header) + 1 // path, remote, params, headers, host
	if key != nil {
		n++
	}
	sb := newStringBoxes(n)
	p.method, p.path, p.query, p.body, p.remote = methodValue(r.Method), sb.box(path), q, body, sb.box(r.RemoteAddr)
	p.params = p.paramFields[:0]
	for _, name := range params {
		p.params = append(p.params, value.Field{Key: name, Value: sb.box(r.PathValue(name))})
	}
	p.headers.fs = headerFields(room, r, &sb)
	if key != nil {
		k, ok := keyOf(r, *key)
		if !ok {
			return nil, value.NewError(value.KindInvalid, "the request has no %s (the route's key)", key)
		}
		p.key = sb.box(k)
	}
	return p, nil
}

// stringBoxes boxes a payload's strings into one block: each string put
// in an interface (a field's value) was an allocation of its own, eight
// for a request with five headers, and a Lua process shares the boxes
// (lua.StringValue). A string boxed here keeps the block alive, and the
// other strings it holds: the path, the remote address, params, header
// values and the key, which the request's header limit (max_header_bytes)
// bounds. Not the body: a script that keeps a header value (or a path)
// would keep a body of up to max_body with it.
type stringBoxes struct{ s []string }

func newStringBoxes(n int) stringBoxes { return stringBoxes{make([]string, 0, n)} }

// box returns s in an interface whose box is s's place in the block.
func (b *stringBoxes) box(s string) any { return anyAt(b.at(s)) }

// at returns s's place in the block; past the block's room (it is sized
// for the payload's strings), a place of its own. A place is written
// once, before any interface is made of it: an interface holding a string
// is never written through.
func (b *stringBoxes) at(s string) *string {
	if len(b.s) == cap(b.s) {
		p := new(string) // not &s: s would move to the heap on every call
		*p = s
		return p
	}
	b.s = append(b.s, s)
	return &b.s[len(b.s)-1]
}

// anyAt is the interface holding *p whose box is p: no copy of the
// string. *p must not change after.
func anyAt(p *string) any {
	v := stringAny
	(*eface)(unsafe.Pointer(&v)).data = unsafe.Pointer(p)
	return v
}

// eface is the layout of an interface{}: its type's word, then a pointer
// to its value.
type eface struct{ typ, data unsafe.Pointer }

// stringAny holds a string: box copies its type word.
var stringAny any = ""

// dotSegment returns the offset of the first "." or ".." segment of the
// decoded path, and the segment, or -1. ServeMux redirects such a path as
// written to its clean form, so one that reaches a route was encoded
// (/a%2F..%2Fb, /%2e%2e/b): served, a handler joining its params to a
// directory would walk out of it.
func dotSegment(path string) (int, string) {
	for i := strings.Index(path, "/."); i >= 0; {
		rest := path[i+1:]
		for _, seg := range [...]string{"..", "."} {
			if strings.HasPrefix(rest, seg) && (len(rest) == len(seg) || rest[len(seg)] == '/') {
				return i + 1, seg
			}
		}
		j := strings.Index(path[i+1:], "/.")
		if j < 0 {
			break
		}
		i += 1 + j
	}
	return -1, ""
}

// controlAt is the offset of the first ASCII control character in s
// (below 0x20, or DEL), a tab excepted when tab is true, or -1. Byte by
// byte: in UTF-8 a byte below 0x80 is always a character of its own, so
// this is what strings.IndexFunc finds, without decoding.
func controlAt(s string, tab bool) int {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 && !(tab && c == '\t') || c == 0x7f {
			return i
		}
	}
	return -1
}

// payload is what RequestPayload makes, in one allocation: the payload's
// fields, the records it holds (params, headers) and room for their
// fields (more params spill into a slice of their own).
type payload struct {
	method, path, query, body, remote, key any // key: nil when the route has none
	params                                 value.Fields
	headers                                boxedRecord
	paramFields                            [2]value.Field
}

// newPayload makes a payload with room for n headers in its block: the
// smallest of a few sizes that holds them (a request with 5 headers and
// its host in a block of 352 bytes, one with 15 in 640 rather than a
// block of 416 and a slice of 384), or for more a slice of their own.
func newPayload(n int) (*payload, []boxedField) {
	switch {
	case n <= 4:
		x := new(struct {
			payload
			hs [4]boxedField
		})
		return &x.payload, x.hs[:0]
	case n <= 6:
		x := new(struct {
			payload
			hs [6]boxedField
		})
		return &x.payload, x.hs[:0]
	case n <= 8:
		x := new(struct {
			payload
			hs [8]boxedField
		})
		return &x.payload, x.hs[:0]
	case n <= 12:
		x := new(struct {
			payload
			hs [12]boxedField
		})
		return &x.payload, x.hs[:0]
	case n <= 16:
		x := new(struct {
			payload
			hs [16]boxedField
		})
		return &x.payload, x.hs[:0]
	}
	return new(payload), make([]boxedField, 0, n)
}

// payloadKeys are the payload's field names, in Field's order, boxed once
// (see value.BoxedRecord).
var payloadKeys = [...]any{"method", "path", "params", "query", "headers", "body", "remote", "key"}

func (p *payload) Len() int {
	if p.key == nil {
		return len(payloadKeys) - 1
	}
	return len(payloadKeys)
}

func (p *payload) Field(i int) (string, any) {
	k, v := p.FieldBox(i)
	return k.(string), v
}

func (p *payload) FieldBox(i int) (any, any) {
	var v any
	switch i {
	case 0:
		v = p.method
	case 1:
		v = p.path
	case 2:
		v = &p.params
	case 3:
		v = p.query
	case 4:
		v = &p.headers
	case 5:
		v = p.body
	case 6:
		v = p.remote
	case 7:
		v = p.key
	}
	return payloadKeys[i], v
}

// A boxedRecord is a value.BoxedRecord: the headers, whose common names
// are boxed once (lowerNames).
type boxedRecord struct{ fs []boxedField }

// A boxedField's value is its place in the payload's stringBoxes: the
// interface FieldBox gives is made from it (anyAt), 8 bytes a header
// fewer than an interface each (a request with five headers and its host
// fits the block of 352 bytes, not 416).
type boxedField struct {
	key any // a string
	v   *string
}

func (r *boxedRecord) Len() int                  { return len(r.fs) }
func (r *boxedRecord) Field(i int) (string, any) { return r.fs[i].key.(string), anyAt(r.fs[i].v) }
func (r *boxedRecord) FieldBox(i int) (any, any) { return r.fs[i].key, anyAt(r.fs[i].v) }

// noFields is the empty record (of a request with no query). Nothing
// changes a record once made.
var noFields = &value.Fields{}

// headerFields appends r's headers to fs: lower-case names, the values of
// a name given several times joined with ", ", and host (r.Host, which
// net/http takes out of the header map).
func headerFields(fs []boxedField, r *nethttp.Request, sb *stringBoxes) []boxedField {
	common := true // every name one of commonNames: their lower-case forms are distinct
	for name, vs := range r.Header {
		l, ok := lowerNames[name]
		if !ok {
			l, common = strings.ToLower(name), false
		}
		fs = append(fs, boxedField{l, sb.at(strings.Join(vs, ", "))})
	}
	if !common {
		// Names that differ only in case ("X-A", "x-a": a map built by
		// hand, not net/http's parser) are one header: the last stays.
		fs = distinctLast(fs)
	}
	if r.Host != "" {
		for i := range fs {
			if fs[i].key == "host" {
				fs = slices.Delete(fs, i, i+1)
				break
			}
		}
		fs = append(fs, boxedField{"host", sb.at(r.Host)})
	}
	return fs
}

// distinctLast keeps the last field of each key.
func distinctLast(fs []boxedField) []boxedField {
	at := make(map[any]int, len(fs))
	out := fs[:0]
	for _, f := range fs {
		if i, ok := at[f.key]; ok {
			out[i].v = f.v
			continue
		}
		at[f.key] = len(out)
		out = append(out, f)
	}
	return out
}

// methodValue is the payload's method: the standard methods are constant
// boxes, so a request does not box its method.
func methodValue(m string) any {
	switch m {
	case "GET":
		return "GET"
	case "POST":
		return "POST"
	case "PUT":
		return "PUT"
	case "DELETE":
		return "DELETE"
	case "PATCH":
		return "PATCH"
	case "HEAD":
		return "HEAD"
	case "OPTIONS":
		return "OPTIONS"
	}
	return m
}

// commonNames are header names common in requests and replies, so that
// lowering a request's names and canonicalizing a reply's cost no
// allocation each for them.
var commonNames = []string{"Accept", "Accept-Encoding", "Accept-Language", "Accept-Ranges",
	"Access-Control-Allow-Credentials", "Access-Control-Allow-Headers", "Access-Control-Allow-Methods",
	"Access-Control-Allow-Origin", "Access-Control-Expose-Headers", "Access-Control-Max-Age", "Age",
	"Authorization", "Cache-Control", "Connection", "Content-Disposition", "Content-Encoding",
	"Content-Language", "Content-Length", "Content-Range", "Content-Security-Policy", "Content-Type",
	"Cookie", "Date", "Etag", "Expires", "Forwarded", "If-Match", "If-Modified-Since", "If-None-Match",
	"Last-Modified", "Link", "Location", "Origin", "Pragma", "Range", "Referer", "Retry-After", "Server",
	"Set-Cookie", "Strict-Transport-Security", "Traceparent", "Tracestate", "Upgrade", "User-Agent", "Vary",
	"Www-Authenticate", "X-Content-Type-Options", "X-Forwarded-For", "X-Forwarded-Host",
	"X-Forwarded-Proto", "X-Frame-Options", "X-Real-Ip", "X-Request-Id"}

// lowerNames maps the canonical form of each common name (as net/http
// gives a request's names) to its lower-case form; canonicalNames the
// lower-case form (as a reply usually names them) to the canonical one.
// lowerNames' values are strings boxed once: a request's header names are
// the keys of its headers record (value.BoxedRecord).
var lowerNames, canonicalNames = func() (lower map[string]any, canonical map[string]string) {
	lower, canonical = map[string]any{}, map[string]string{}
	for _, n := range commonNames {
		c, l := nethttp.CanonicalHeaderKey(n), strings.ToLower(n)
		lower[c], canonical[l] = l, c
	}
	return lower, canonical
}()

func lowerName(name string) string {
	if l, ok := lowerNames[name]; ok {
		return l.(string)
	}
	return strings.ToLower(name)
}

// canonicalName is name's canonical form: a common name's from the
// table, another's made by net/http and learned (see replyNames) so that
// the next reply naming it costs no allocation.
func canonicalName(name string) string {
	if c, ok := (*replyNames.Load())[name]; ok {
		return c
	}
	c := nethttp.CanonicalHeaderKey(name)
	if c != name && len(name) <= maxLearnedName {
		learnName(name, c)
	}
	return c
}

// replyNames are canonicalNames and the other names replies were seen to
// give not in canonical form (a Lua handler's "x-request-kind"), at most
// maxLearned of them, each at most maxLearnedName bytes: a handler names
// the same few headers in every reply, and one that makes up names
// cannot grow the table past its bound (past it a name is canonicalized
// each time, as before). Read without a lock; a name learned copies the
// table (at most maxLearned times in the process's life).
var (
	replyNames   atomic.Pointer[map[string]string]
	replyNamesMu sync.Mutex
	learned      int
)

const (
	maxLearned     = 256
	maxLearnedName = 64
)

func init() { replyNames.Store(&canonicalNames) }

func learnName(name, canonical string) {
	replyNamesMu.Lock()
	defer replyNamesMu.Unlock()
	cur := *replyNames.Load()
	if _, ok := cur[name]; ok || learned >= maxLearned {
		return
	}
	next := make(map[string]string, len(cur)+1)
	for k, v := range cur {
		next[k] = v
	}
	// Its own copy: name may be a view of a larger string (a Lua
	// handler's), which the table must not keep alive.
	next[strings.Clone(name)] = canonical
	learned++
	replyNames.Store(&next)
}

// queryOf is the payload's query: a map, or noFields when there is none.
func queryOf(raw string) (any, error) {
	if raw == "" {
		return noFields, nil
	}
	if n := strings.Count(raw, "&") + strings.Count(raw, ";") + 1; n > MaxQueryParams {
		return nil, value.NewError(value.KindInvalid, "more than %d query parameters", MaxQueryParams)
	}
	vals, err := url.ParseQuery(raw)
	if err != nil {
		return nil, value.NewError(value.KindInvalid, "query: %v", err)
	}
	out := make(map[string]any, len(vals))
	for k, vs := range vals {
		if len(vs) == 1 {
			out[k] = vs[0]
			continue
		}
		list := make([]any, len(vs))
		for i, v := range vs {
			list[i] = v
		}
		out[k] = list
	}
	return out, nil
}

// keyOf reads a route's key from r.
func keyOf(r *nethttp.Request, k KeySpec) (string, bool) {
	var v string
	switch k.Source {
	case KeyPath:
		v = r.PathValue(k.Name)
	case KeyQuery:
		v = r.URL.Query().Get(k.Name)
	case KeyHeader:
		v = r.Header.Get(k.Name)
	}
	return v, v != ""
}

// Response is what a reply becomes.
type Response struct {
	Status int
	Header nethttp.Header
	Body   string
}

// The Content-Type values the server gives itself. A header map holds them
// without a copy: nothing writes into a value slice of a header map
// (Set and Add replace or append, and append copies a full slice).
var (
	textPlain = []string{"text/plain; charset=utf-8"}
	jsonType  = []string{"application/json"}
)

// ReplyResponse turns a reply into a response: a table {status, headers,
// body} (status default 200; a body that is not a string is sent as JSON,
// with its content type unless the reply names one), or a bare string, a
// 200 text/plain. Anything else, or a table that breaks a rule (a status
// outside 200–599, a header that is no valid name or value), is an
// internal error: the handler's fault.
func ReplyResponse(v any) (*Response, error) {
	h := nethttp.Header{}
	resp, err := replyInto(v, h)
	if err != nil {
		return nil, err
	}
	return &resp, nil
}

// replyInto is ReplyResponse with the response's headers added to h
// (the connection's own header map when a route serves): the Response's
// Header is h. Headers past MaxReplyHeaderBytes are an error, and on an
// error what it added to h is cleared.
func replyInto(v any, h nethttp.Header) (Response, error) {
	var resp Response
	var err error
	switch x := v.(type) {
	case string:
		h["Content-Type"] = textPlain
		return Response{Status: nethttp.StatusOK, Header: h, Body: x}, nil
	case map[string]any:
		resp, err = tableResponse(func(k string) (any, bool) { c, ok := x[k]; return c, ok }, len(x), h)
	case map[any]any:
		resp, err = tableResponse(func(k string) (any, bool) { c, ok := x[k]; return c, ok }, len(x), h)
	case value.Record:
		// A Lua handler's reply to a route's ask (route.call accepts one).
		resp, err = recordResponse(x, h)
	default:
		return Response{}, value.NewError(value.KindInternal, "the handler replied with %s; want a table {status=, headers=, body=} or a string", typeName(v))
	}
	if err == nil {
		err = checkHeaderBytes(h)
	}
	if err != nil {
		clear(h)
	}
	return resp, err
}

var replyFields = []string{"status", "headers", "body"}

func tableResponse(get func(string) (any, bool), n int, h nethttp.Header) (Response, error) {
	var f replyTable
	for i, name := range replyFields {
		if v, ok := get(name); ok {
			f.v[i], f.has[i] = v, true
			n--
		}
	}
	if n != 0 {
		return Response{}, errOtherFields()
	}
	return f.response(h)
}

// recordResponse is tableResponse of a Record, in one pass over its
// fields (a lookup of each of the three names was a pass each, twice).
// A name given twice is a field besides, as it was: the three found
// did not count all of them.
func recordResponse(r value.Record, h nethttp.Header) (Response, error) {
	var f replyTable
	for i := range r.Len() {
		k, v := r.Field(i)
		j := slices.Index(replyFields, k)
		if j < 0 || f.has[j] {
			return Response{}, errOtherFields()
		}
		f.v[j], f.has[j] = v, true
	}
	return f.response(h)
}

func errOtherFields() error {
	return value.NewError(value.KindInternal, "the handler's reply has fields besides status, headers and body")
}

// replyTable is a reply's status, headers and body (replyFields' order),
// and which of them it has.
type replyTable struct {
	v   [3]any
	has [3]bool
}

func (f *replyTable) response(h nethttp.Header) (Response, error) {
	resp := Response{Status: nethttp.StatusOK, Header: h}
	if f.has[0] {
		n, isNum := f.v[0].(float64)
		if !isNum || n != math.Trunc(n) || n < 200 || n > 599 {
			return Response{}, value.NewError(value.KindInternal, "the handler's reply has status %s; want an integer from 200 to 599", shortValue(f.v[0]))
		}
		resp.Status = int(n)
	}
	if f.has[1] {
		if err := replyHeaders(h, f.v[1]); err != nil {
			return Response{}, err
		}
	}
	switch x := f.v[2].(type) { // nil when the reply has no body
	case nil:
	case string:
		resp.Body = x
		if h.Get("Content-Type") == "" {
			h["Content-Type"] = textPlain
		}
	default:
		jf, err := value.JSONForm(x)
		if err != nil {
			return Response{}, value.NewError(value.KindInternal, "the handler's reply body has no JSON form: %v", err)
		}
		var buf strings.Builder
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(jf); err != nil {
			return Response{}, value.NewError(value.KindInternal, "the handler's reply body: %v", err)
		}
		resp.Body = buf.String()
		if h.Get("Content-Type") == "" {
			h["Content-Type"] = jsonType
		}
	}
	return resp, nil
}

// Headers the server sets itself: a reply that sets them is refused, as
// they would break the framing of the connection.
var framingHeaders = []string{"Content-Length", "Transfer-Encoding", "Connection", "Trailer", "Upgrade"}

func replyHeaders(dst nethttp.Header, h any) error {
	// The headers' first values share one slice, made for as many as
	// remain when the first is added (a value slice per header was an
	// allocation each); a header's further values, or one named again in
	// another case, grow its own (its capacity is its length).
	var spare []string
	left := 0 // headers not yet given to add
	put := func(cn, s string) {
		if cur, ok := dst[cn]; ok {
			dst[cn] = append(cur, s)
			return
		}
		if len(spare) == 0 {
			spare = make([]string, left+1) // this one and those left
		}
		spare[0] = s
		dst[cn] = spare[:1:1]
		spare = spare[1:]
	}
	add := func(name string, v any) error {
		left--
		if !validToken(name) {
			return value.NewError(value.KindInternal, "the handler's reply sets the header %q, which is no header name", clip(name, 64))
		}
		cn := canonicalName(name)
		for _, f := range framingHeaders {
			if cn == f {
				return value.NewError(value.KindInternal, "the handler's reply sets %s, which the server sets itself", cn)
			}
		}
		// cn is canonical: Add would make it so again.
		switch x := v.(type) {
		case string:
			if err := badValue(cn, x); err != nil {
				return err
			}
			put(cn, x)
		case float64:
			if math.IsInf(x, 0) || math.IsNaN(x) { // as json.encode: no text would say what the script meant
				return value.NewError(value.KindInternal, "the handler's reply header %s is %s; want a finite number", cn, shortValue(x))
			}
			put(cn, strconv.FormatFloat(x, 'f', -1, 64))
		case []any:
			for _, e := range x {
				if _, ok := e.(string); !ok {
					return value.NewError(value.KindInternal, "the handler's reply header %s holds %s; want strings", cn, typeName(e))
				}
			}
			for _, e := range x {
				if err := badValue(cn, e.(string)); err != nil {
					return err
				}
				put(cn, e.(string))
			}
		default:
			return value.NewError(value.KindInternal, "the handler's reply header %s is %s; want a string, a number or a list of strings", cn, typeName(v))
		}
		return nil
	}
	tooMany := func(n int) error {
		if n > MaxReplyHeaders {
			return value.NewError(value.KindInternal, "the handler's reply sets more than %d headers", MaxReplyHeaders)
		}
		return nil
	}
	// The names go to add as strings: a map[string]any's keys are not
	// boxed again (an allocation per header).
	switch x := h.(type) {
	case map[string]any:
		if err := tooMany(len(x)); err != nil {
			return err
		}
		left = len(x)
		for k, v := range x {
			if err := add(k, v); err != nil {
				return err
			}
		}
	case value.Record:
		if err := tooMany(x.Len()); err != nil {
			return err
		}
		left = x.Len()
		for i := range x.Len() {
			if err := add(x.Field(i)); err != nil {
				return err
			}
		}
	case map[any]any:
		if err := tooMany(len(x)); err != nil {
			return err
		}
		left = len(x)
		for k, v := range x {
			name, ok := k.(string)
			if !ok {
				return value.NewError(value.KindInternal, "the handler's reply headers have a %s key; want header names", typeName(k))
			}
			if err := add(name, v); err != nil {
				return err
			}
		}
	default:
		return value.NewError(value.KindInternal, "the handler's reply headers are %s; want a table of name = value", typeName(h))
	}
	return nil
}

// badValue is the error for a reply header value that holds a byte no
// header value may (RFC 9110 §5.5: a control character other than a tab:
// a line break, NUL, ESC, DEL), or nil.
func badValue(cn, s string) error {
	bad := controlAt(s, true)
	if bad < 0 {
		return nil
	}
	what := "a control character"
	if s[bad] == '\r' || s[bad] == '\n' {
		what = "a line break"
	}
	return value.NewError(value.KindInternal, "the handler's reply header %s holds %s (0x%02x at offset %d)", cn, what, s[bad], bad)
}

func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "nil"
	case bool:
		return "a boolean"
	case float64:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "a list"
	case map[string]any, map[any]any, value.Record:
		return "a table"
	case *value.Error:
		return "an error"
	}
	return fmt.Sprintf("a %T", v)
}

func shortValue(v any) string {
	switch x := v.(type) {
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case string:
		return strconv.Quote(clip(x, 32))
	}
	return typeName(v)
}

// StatusOf maps an error to a status by its kind: invalid 400,
// not_found 404, limit 429 (a full mailbox or queue), timeout 504,
// stopped 503, everything else 500. A failure to reach the target — it
// is not running, its node is unreachable (noconnection) — is 503,
// whatever its kind.
func StatusOf(err error) int {
	if unavailable(err) {
		return nethttp.StatusServiceUnavailable
	}
	switch value.KindOf(err) {
	case value.KindInvalid:
		return nethttp.StatusBadRequest
	case value.KindNotFound:
		return nethttp.StatusNotFound
	case value.KindLimit:
		return nethttp.StatusTooManyRequests
	case value.KindTimeout:
		return nethttp.StatusGatewayTimeout
	case value.KindStopped:
		return nethttp.StatusServiceUnavailable
	}
	return nethttp.StatusInternalServerError
}

// unavailable reports whether err says the target cannot be reached.
func unavailable(err error) bool {
	for _, s := range []error{process.ErrNoConnection, process.ErrUnreachable, process.ErrNameNotFound,
		process.ErrNoProcess, registry.ErrNotRunning} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

// errorBody is the JSON body of an error response.
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
}

// ErrorResponse is the response to err: StatusOf's status and the body
// {"error": {"kind", "message"}}. The message is the error's first line,
// cut at 1 KiB: a traceback or a stack never reaches a client.
// A target that cannot be reached is a 503 whose kind says why: stopped,
// or noconnection for its node; never the not_found of the lookup that
// found no process, which the table maps to 404.
func ErrorResponse(err error) *Response {
	if unavailable(err) {
		kind := value.KindStopped
		if value.KindOf(err) == value.KindNoConnection {
			kind = value.KindNoConnection
		}
		return errorResponse(nethttp.StatusServiceUnavailable, &value.Error{Kind: kind, Message: err.Error()})
	}
	return errorResponse(StatusOf(err), err)
}

func errorResponse(status int, err error) *Response {
	kind := value.KindOf(err)
	if kind == "" {
		kind = value.KindInternal
	}
	msg := err.Error()
	if i := strings.Index(msg, "stack traceback:"); i >= 0 {
		msg = msg[:i]
	}
	if i := strings.IndexAny(msg, "\r\n"); i >= 0 {
		msg = msg[:i]
	}
	msg = strings.ToValidUTF8(strings.TrimSpace(clip(msg, maxErrorMessage)), "\uFFFD")
	b, _ := json.Marshal(errorBody{Error: errorDetail{Kind: string(kind), Message: msg}})
	return &Response{Status: status, Header: nethttp.Header{"Content-Type": jsonType}, Body: string(append(b, '\n'))}
}

// clip cuts s to n bytes at most, on a UTF-8 boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// chunkingBuffer is what net/http buffers of a response before it sends
// it chunked (bufferBeforeChunkingSize): a smaller body written at once
// gets its Content-Length from net/http when the handler returns.
const chunkingBuffer = 2048

// write sends resp. Its headers go to w's (when they are not w's own: a
// route's reply is read into the connection's header map).
func (resp *Response) write(w nethttp.ResponseWriter) {
	h := w.Header()
	for k, vs := range resp.Header {
		h[k] = vs
	}
	if n := len(resp.Body); n == 0 || n >= chunkingBuffer || !bodyAllowed(resp.Status) {
		h["Content-Length"] = []string{strconv.Itoa(n)}
	}
	w.WriteHeader(resp.Status)
	_, _ = io.WriteString(w, resp.Body)
}

// bodyAllowed is net/http's rule: 1xx, 204 and 304 have no body.
func bodyAllowed(status int) bool {
	return !(status >= 100 && status <= 199 || status == nethttp.StatusNoContent || status == nethttp.StatusNotModified)
}

package lua

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode"
	"unicode/utf8"
	"unsafe"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/pm"
)

// The string functions that can build a large string or run for a long
// time are Proctor's own: they respect the per-string limit (see
// limits.go) and stop when their process is asked to stop. The pattern
// functions follow Lua 5.1 (lstrlib.c) on top of the fork's compiled
// patterns (pm.Compile), matched one position at a time: gopher-lua's own
// collected every match first, copied the whole result once per
// replacement in gsub (quadratic), and could not be interrupted.

// wrapStringLib replaces the functions of the shared string table.
func wrapStringLib(L *lua.LState, lib *lua.LTable) {
	for name, fn := range map[string]lua.LGFunction{
		"rep":     strRep,
		"find":    strFind,
		"match":   strMatch,
		"gsub":    strGsub,
		"format":  strFormat,
		"reverse": strReverse,
		"upper":   func(L *lua.LState) int { return strCase(L, "string.upper", unicode.ToUpper, strings.ToUpper) },
		"lower":   func(L *lua.LState) int { return strCase(L, "string.lower", unicode.ToLower, strings.ToLower) },
	} {
		lib.RawSetString(name, L.NewFunction(fn))
	}
	gmatch := L.NewFunction(strGmatch)
	lib.RawSetString("gmatch", gmatch)
	lib.RawSetString("gfind", gmatch)
}

// chunkBytes is how much a builtin copies or converts between two looks at
// its process's stop request: a 64 MiB string.rep or upper takes a few
// hundred milliseconds in one go on a busy machine, a chunk about one.
const chunkBytes = 1 << 20

// strRep is string.rep(s, n).
func strRep(L *lua.LState) int {
	s := L.CheckString(1)
	n := float64(L.CheckNumber(2))
	if !(n >= 1) || s == "" { // n < 1 or NaN
		L.Push(lua.LString(""))
		return 1
	}
	total := float64(len(s)) * math.Floor(n)
	checkStringSize(L, "string.rep", total)
	if total <= chunkBytes {
		L.Push(lua.LString(strings.Repeat(s, int(n))))
		return 1
	}
	// Double what is filled, a chunk at most at a time; the filled part
	// is always whole copies of s.
	buf := make([]byte, int(total))
	filled := copy(buf, s)
	for filled < len(buf) {
		checkInterrupt(L)
		k := filled
		if k > chunkBytes {
			k = max(chunkBytes/len(s), 1) * len(s)
		}
		filled += copy(buf[filled:], buf[:k])
	}
	L.Push(lua.LString(unsafe.String(&buf[0], len(buf))))
	return 1
}

// strReverse is string.reverse(s).
func strReverse(L *lua.LState) int {
	s := L.CheckString(1)
	if s == "" {
		L.Push(lua.LString(""))
		return 1
	}
	out := make([]byte, len(s))
	for i := range out {
		if i%chunkBytes == chunkBytes-1 {
			checkInterrupt(L)
		}
		out[i] = s[len(s)-1-i]
	}
	L.Push(lua.LString(unsafe.String(&out[0], len(out))))
	return 1
}

// strCase is string.upper or string.lower. A byte that is not UTF-8
// becomes U+FFFD (three bytes) and a few letters change their length, so
// a large result is measured before it is made, and made a chunk at a
// time. Chunks end before a byte that starts a rune: no rune, valid or
// not, spans two.
func strCase(L *lua.LState, what string, mapRune func(rune) rune, mapString func(string) string) int {
	s := L.CheckString(1)
	if len(s) <= chunkBytes {
		L.Push(lua.LString(mapString(s)))
		return 1
	}
	n := 0
	for i, r := range s {
		if i%chunkBytes < 4 {
			checkInterrupt(L)
		}
		n += utf8.RuneLen(mapRune(r))
	}
	checkStringSize(L, what, float64(n))
	var b strings.Builder
	b.Grow(n)
	for i := 0; i < len(s); {
		checkInterrupt(L)
		j := min(i+chunkBytes, len(s))
		for j < len(s) && j > i && !utf8.RuneStart(s[j]) {
			j--
		}
		if j == i { // no rune start in a whole chunk: cannot happen, runes are short
			j = min(i+chunkBytes, len(s))
		}
		b.WriteString(mapString(s[i:j]))
		i = j
	}
	L.Push(lua.LString(b.String()))
	return 1
}

// patterns caches compiled patterns: they are read-only, so every process
// shares them. A script that makes a new pattern per call fills the cache
// once; it is then emptied and refilled, so it stays small.
var patterns struct {
	m sync.Map // string -> *pm.Pattern
	n atomic.Int32
}

const (
	maxCachedPatterns   = 1024
	maxCachedPatternLen = 256
)

// compilePattern compiles p, or raises with the reason.
func compilePattern(L *lua.LState, p string) *pm.Pattern {
	if v, ok := patterns.m.Load(p); ok {
		return v.(*pm.Pattern)
	}
	pat, err := pm.Compile(p)
	if err != nil {
		L.RaiseError("malformed pattern %s: %s", quotePattern(p), err.Error())
	}
	if len(p) <= maxCachedPatternLen {
		if patterns.n.Add(1) > maxCachedPatterns {
			patterns.m.Clear()
			patterns.n.Store(0)
		}
		patterns.m.Store(p, pat)
	}
	return pat
}

// maxQuotedPattern is how much of a pattern an error message quotes: a
// 1 MB pattern must not make a 1 MB message.
const maxQuotedPattern = 64

// quotePattern quotes p for an error message, cut to maxQuotedPattern
// bytes.
func quotePattern(p string) string {
	if len(p) <= maxQuotedPattern {
		return strconv.Quote(p)
	}
	return fmt.Sprintf("%q... (%d bytes)", p[:maxQuotedPattern], len(p))
}

// findFrom returns the first match of pat in s at init or after it, or
// nil; it raises on a pattern error and when the process is asked to stop
// meanwhile.
func findFrom(L *lua.LState, pat *pm.Pattern, s string, init int) *pm.MatchData {
	md, err := pat.FindFrom(unsafeBytes(s), init, ProcessOf(L).stopCheck())
	if err != nil {
		L.RaiseError("%s", err.Error())
	}
	return md
}

// unsafeBytes views s as bytes; the matcher only reads them.
func unsafeBytes(s string) []byte {
	if s == "" {
		return nil
	}
	return unsafe.Slice(unsafe.StringData(s), len(s))
}

// startIndex converts a Lua init argument (1-based, negative from the end)
// to a 0-based offset in 0..n, as Lua 5.1's find and match do.
func startIndex(init, n int) int {
	if init < 0 {
		init += n + 1
	}
	init--
	if init < 0 {
		return 0
	}
	if init > n {
		return n
	}
	return init
}

// specials are the characters that make a pattern more than plain text.
const specials = "^$*+?.([%-"

func strFind(L *lua.LState) int  { return strFindAux(L, true) }
func strMatch(L *lua.LState) int { return strFindAux(L, false) }

// strFindAux is string.find (find) and string.match.
func strFindAux(L *lua.LState, find bool) int {
	s := L.CheckString(1)
	p := L.CheckString(2)
	init := startIndex(L.OptInt(3, 1), len(s))
	if find && (lua.LVAsBool(L.Get(4)) || !strings.ContainsAny(p, specials)) {
		i := strings.Index(s[init:], p)
		if i < 0 {
			L.Push(lua.LNil)
			return 1
		}
		L.Push(lua.LNumber(init + i + 1))
		L.Push(lua.LNumber(init + i + len(p)))
		return 2
	}
	md := findFrom(L, compilePattern(L, p), s, init)
	if md == nil {
		L.Push(lua.LNil)
		return 1
	}
	if find {
		L.Push(lua.LNumber(md.Capture(0) + 1))
		L.Push(lua.LNumber(md.Capture(1)))
		return 2 + pushCaptures(L, s, md, false)
	}
	return pushCaptures(L, s, md, true)
}

// pushCaptures pushes the captures of md (position captures as numbers),
// or the whole match when there are none and whole is set.
func pushCaptures(L *lua.LState, s string, md *pm.MatchData, whole bool) int {
	n := md.CaptureLength()/2 - 1
	if n == 0 && whole {
		L.Push(lua.LString(s[md.Capture(0):md.Capture(1)]))
		return 1
	}
	for i := 1; i <= n; i++ {
		L.Push(capture(s, md, i))
	}
	return n
}

// capture returns capture i (1-based) of md.
func capture(s string, md *pm.MatchData, i int) lua.LValue {
	if md.IsPosCapture(2 * i) {
		return lua.LNumber(md.Capture(2 * i))
	}
	return lua.LString(s[md.Capture(2*i):md.Capture(2*i+1)])
}

// gmatchState is the state of one string.gmatch iterator.
type gmatchState struct {
	s    string
	pat  *pm.Pattern
	pos  int
	done bool
}

// strGmatch is string.gmatch: it returns an iterator that finds the next
// match each time it is called.
func strGmatch(L *lua.LState) int {
	s := L.CheckString(1)
	pat := compilePattern(L, L.CheckString(2))
	ud := L.NewUserData()
	ud.Value = &gmatchState{s: s, pat: pat}
	L.Push(L.NewClosure(gmatchNext, ud))
	return 1
}

func gmatchNext(L *lua.LState) int {
	st := L.CheckUserData(lua.UpvalueIndex(1)).Value.(*gmatchState)
	if st.done {
		return 0
	}
	md := findFrom(L, st.pat, st.s, st.pos)
	if md == nil {
		st.done = true
		return 0
	}
	start, end := md.Capture(0), md.Capture(1)
	st.pos = end
	if end == start {
		st.pos++ // an empty match: move on at least one position
	}
	if st.pos > len(st.s) || st.pat.MustHead {
		st.done = true
	}
	return pushCaptures(L, st.s, md, true)
}

// strGsub is string.gsub(s, pattern, repl [, n]).
func strGsub(L *lua.LState) int {
	s := L.CheckString(1)
	pat := compilePattern(L, L.CheckString(2))
	L.CheckTypes(3, lua.LTNumber, lua.LTString, lua.LTTable, lua.LTFunction)
	repl := L.Get(3)
	maxN := -1
	if L.Get(4) != lua.LNil {
		if maxN = L.CheckInt(4); maxN < 0 {
			maxN = 0
		}
	}
	var b strings.Builder
	add := func(piece string) {
		checkStringSize(L, "string.gsub", float64(b.Len()+len(piece)))
		b.WriteString(piece)
	}
	pos, n := 0, 0
	for maxN < 0 || n < maxN {
		if n%checkEvery == checkEvery-1 {
			checkInterrupt(L)
		}
		md := findFrom(L, pat, s, pos)
		if md == nil {
			break
		}
		start, end := md.Capture(0), md.Capture(1)
		n++
		add(s[pos:start])
		gsubValue(L, s, md, repl, add)
		if end > start {
			pos = end
		} else {
			if start < len(s) {
				add(s[start : start+1])
			}
			pos = start + 1
		}
		if pos > len(s) || pat.MustHead {
			break
		}
	}
	if pos < len(s) {
		add(s[pos:])
	}
	L.Push(lua.LString(b.String()))
	L.Push(lua.LNumber(n))
	return 2
}

// gsubValue adds the replacement of one match, as Lua 5.1's add_value.
func gsubValue(L *lua.LState, s string, md *pm.MatchData, repl lua.LValue, add func(string)) {
	whole := s[md.Capture(0):md.Capture(1)]
	var v lua.LValue
	switch r := repl.(type) {
	case lua.LString, lua.LNumber:
		gsubString(L, s, md, lua.LVAsString(r), add)
		return
	case *lua.LTable:
		v = L.GetTable(r, firstCapture(s, md))
	case *lua.LFunction:
		L.Push(r)
		L.Call(pushCaptures(L, s, md, true), 1)
		v = L.Get(-1)
		L.Pop(1)
	}
	switch x := v.(type) {
	case lua.LString, lua.LNumber:
		add(lua.LVAsString(x))
	default:
		if lua.LVIsFalse(v) {
			add(whole) // keep the original text
			return
		}
		L.RaiseError("invalid replacement value (a %s)", v.Type().String())
	}
}

// firstCapture is the first capture of md, or the whole match.
func firstCapture(s string, md *pm.MatchData) lua.LValue {
	if md.CaptureLength() > 2 {
		return capture(s, md, 1)
	}
	return lua.LString(s[md.Capture(0):md.Capture(1)])
}

// gsubString adds a replacement string: %0 is the whole match, %1-%9 the
// captures (%1 is the whole match when there are none), %% a %.
func gsubString(L *lua.LState, s string, md *pm.MatchData, repl string, add func(string)) {
	ncap := md.CaptureLength()/2 - 1
	for {
		i := strings.IndexByte(repl, '%')
		if i < 0 {
			add(repl)
			return
		}
		add(repl[:i])
		if i+1 == len(repl) {
			L.RaiseError("invalid use of '%%' in replacement string")
		}
		c := repl[i+1]
		repl = repl[i+2:]
		switch {
		case c == '0' || (c == '1' && ncap == 0):
			add(s[md.Capture(0):md.Capture(1)])
		case c >= '1' && c <= '9':
			k := int(c - '0')
			if k > ncap {
				L.RaiseError("invalid capture index %%%d", k)
			}
			add(lua.LVAsString(capture(s, md, k)))
		default:
			add(string(c))
		}
	}
}

// strFormat is string.format, as Lua 5.1's str_format (lstrlib.c): the
// directives %c %d %i %o %u %x %X %e %E %f %g %G %q %s and %%, with at most
// 5 flags and 2 digits of width and of precision; a directive that is not
// one of these, a missing or wrong argument, are the errors C Lua raises.
// (It was Go's fmt.Sprintf, which wrote "%!(NOVERB)" or "%!s(MISSING)"
// where Lua raises, "\x00" where %q writes "\000", and all of Go's
// digits.) One difference: %s of a value with a __tostring metamethod
// (Proctor's error values, objects) writes what tostring does, as in
// Lua 5.2; Lua 5.1 accepts only strings and numbers. The result's size is
// checked as it grows: a directive writes at most a few hundred bytes
// besides a %s or %q argument, whose size is known before it is copied.
func strFormat(L *lua.LState) int {
	f := L.CheckString(1)
	var b strings.Builder
	arg := 1
	grow := func(n int) {
		checkStringSize(L, "string.format", float64(b.Len())+float64(n))
	}
	for i := 0; i < len(f); i++ {
		c := f[i]
		if c != '%' {
			b.WriteByte(c)
			continue
		}
		i++
		if i < len(f) && f[i] == '%' {
			b.WriteByte('%')
			continue
		}
		// The directive: flags, width, precision (scanformat).
		start := i
		for i < len(f) && strings.IndexByte("-+ #0", f[i]) >= 0 {
			i++
		}
		if i-start > 5 {
			L.RaiseError("invalid format (repeated flags)")
		}
		flags := f[start:i]
		digits := func() string {
			d := i
			for i < len(f) && i-d < 3 && f[i] >= '0' && f[i] <= '9' {
				i++
			}
			if i-d > 2 {
				L.RaiseError("invalid format (width or precision too long)")
			}
			return f[d:i]
		}
		width := digits()
		prec, hasPrec := "", false
		if i < len(f) && f[i] == '.' {
			i++
			prec, hasPrec = digits(), true
		}
		if i >= len(f) {
			L.RaiseError("%s", "invalid option '%' to 'format'")
		}
		conv := f[i]
		arg++
		if strings.IndexByte("cdiouxXeEfgGqs", conv) < 0 {
			L.RaiseError("invalid option '%%%s' to 'format'", f[i:i+1]) // the byte, as C's %c: not a rune
		}
		if arg > L.GetTop() {
			formatArgError(L, arg, "no value")
		}
		spec := "%" + flags + width
		if hasPrec {
			spec += "." + prec
		}
		var piece string // a directive's output but for %s and %q: at most a few hundred bytes
		switch conv {
		case 'c':
			piece = padC(byte(int64(checkFormatNumber(L, arg))), flags, width)
		case 'd', 'i', 'o', 'u', 'x', 'X':
			piece = formatInteger(int64(checkFormatNumber(L, arg)), conv, flags, width, prec, hasPrec)
		case 'e', 'E', 'f', 'g', 'G':
			n := float64(checkFormatNumber(L, arg))
			if math.IsInf(n, 0) || math.IsNaN(n) {
				piece = formatNonFinite(n, conv, flags, width)
				break
			}
			if !hasPrec {
				spec += ".6" // C's default; Go's %g writes the shortest form
			}
			piece = fmt.Sprintf(spec+string(conv), n)
		case 'q':
			s := checkFormatString(L, arg)
			grow(quotedSize(s))
			quoteLua51(&b, s)
			continue
		case 's':
			s := checkFormatString(L, arg)
			if !hasPrec && len(s) >= 100 {
				// As C Lua: a long string is copied whole, not formatted.
				grow(len(s))
				b.WriteString(s)
				continue
			}
			if hasPrec {
				p, _ := strconv.Atoi(prec)
				s = s[:min(p, len(s))]
			}
			piece = pad(s, flags, width) // s is short here: under 100 bytes, or cut to 99
		}
		grow(len(piece))
		b.WriteString(piece)
	}
	L.Push(lua.LString(b.String()))
	return 1
}

// checkFormatNumber is luaL_checknumber for format's argument n: a number,
// or a string that converts to one.
func checkFormatNumber(L *lua.LState, n int) lua.LNumber {
	v, ok := lua.LVToNumber(L.Get(n))
	if !ok {
		formatArgError(L, n, "number expected, got "+L.Get(n).Type().String())
	}
	return v
}

// checkFormatString is luaL_checklstring for format's argument n: a
// string, or a number written as Lua writes it; besides, as Lua 5.2, a
// value with a __tostring metamethod written by it.
func checkFormatString(L *lua.LState, n int) string {
	switch v := L.Get(n).(type) {
	case lua.LString:
		return string(v)
	case lua.LNumber:
		return v.String()
	}
	if L.GetMetaField(L.Get(n), "__tostring") != lua.LNil {
		return L.ToStringMeta(L.Get(n)).String()
	}
	formatArgError(L, n, "string expected, got "+L.Get(n).Type().String())
	return ""
}

// formatArgError raises C Lua's luaL_argerror for format's argument n.
func formatArgError(L *lua.LState, n int, msg string) {
	L.RaiseError("bad argument #%d to 'format' (%s)", n, msg)
}

// formatInteger is C's printf of a long (%d, %i) or of an unsigned long
// (%o, %u, %x, %X) with flags, width and precision. Go's fmt differs: it
// writes the sign flags for unsigned conversions, and its zero padding
// does not count the 0x of %#x.
func formatInteger(n int64, conv byte, flags, width, prec string, hasPrec bool) string {
	has := func(f byte) bool { return strings.IndexByte(flags, f) >= 0 }
	var digits, prefix string
	switch conv {
	case 'd', 'i':
		u := uint64(n)
		if n < 0 {
			u = -u
			prefix = "-"
		} else if has('+') {
			prefix = "+"
		} else if has(' ') {
			prefix = " "
		}
		digits = strconv.FormatUint(u, 10)
	case 'u':
		digits = strconv.FormatUint(uint64(n), 10)
	case 'o':
		digits = strconv.FormatUint(uint64(n), 8)
	default:
		digits = strconv.FormatUint(uint64(n), 16)
		if conv == 'X' {
			digits = strings.ToUpper(digits)
		}
		if has('#') && n != 0 {
			prefix = "0" + string(conv)
		}
	}
	if hasPrec {
		p, _ := strconv.Atoi(prec)
		if p == 0 && n == 0 {
			digits = ""
		}
		if len(digits) < p {
			digits = strings.Repeat("0", p-len(digits)) + digits
		}
	}
	if conv == 'o' && has('#') && !strings.HasPrefix(digits, "0") {
		digits = "0" + digits
	}
	w, _ := strconv.Atoi(width)
	if fill := w - len(prefix) - len(digits); fill > 0 && has('0') && !has('-') && !hasPrec {
		digits = strings.Repeat("0", fill) + digits
	}
	return pad(prefix+digits, flags, width)
}

// pad pads s with spaces to the width, on the left, or on the right with
// the - flag (C's %s counts bytes, Go's fmt counts runes).
func pad(s, flags, width string) string {
	w, _ := strconv.Atoi(width)
	if len(s) >= w {
		return s
	}
	if strings.IndexByte(flags, '-') >= 0 {
		return s + strings.Repeat(" ", w-len(s))
	}
	return strings.Repeat(" ", w-len(s)) + s
}

// padC is %c: the byte itself (Go's %c writes a rune in UTF-8), padded.
func padC(c byte, flags, width string) string {
	return pad(string([]byte{c}), flags, width)
}

// formatNonFinite writes an infinity or a NaN as glibc's printf does:
// "inf", "-inf", "nan" or "-nan" (upper case for %E, %G), after a + or
// space flag's sign, padded with spaces (never zeros).
func formatNonFinite(n float64, conv byte, flags, width string) string {
	s := "inf"
	if math.IsNaN(n) {
		s = "nan"
	}
	switch {
	case math.Signbit(n):
		s = "-" + s
	case strings.IndexByte(flags, '+') >= 0:
		s = "+" + s
	case strings.IndexByte(flags, ' ') >= 0:
		s = " " + s
	}
	if conv == 'E' || conv == 'G' {
		s = strings.ToUpper(s)
	}
	return pad(s, flags, width)
}

// quotedSize is the length of what quoteLua51 writes for s.
func quotedSize(s string) int {
	n := len(s) + 2
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '"', '\\', '\n', '\r':
			n++
		case 0:
			n += 3
		}
	}
	return n
}

// quoteLua51 is %q: s between double quotes, with ", \ and newline
// escaped by a backslash, \r as \r and NUL as \000 (what Lua 5.1.5
// writes); every other byte as it is.
func quoteLua51(b *strings.Builder, s string) {
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"', '\\', '\n':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\r':
			b.WriteString("\\r")
		case 0:
			b.WriteString("\\000")
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
}

package lua

import (
	"context"
	"fmt"
	"math"
	"os"
	"strconv"
)

type LValueType int

const (
	LTNil LValueType = iota
	LTBool
	LTNumber
	LTString
	LTFunction
	LTUserData
	LTThread
	LTTable
	LTChannel
)

var lValueNames = [9]string{"nil", "boolean", "number", "string", "function", "userdata", "thread", "table", "channel"}

func (vt LValueType) String() string {
	return lValueNames[int(vt)]
}

type LValue interface {
	String() string
	Type() LValueType
}

// LVIsFalse returns true if a given LValue is a nil or false otherwise false.
func LVIsFalse(v LValue) bool { return v == LNil || v == LFalse }

// LVIsFalse returns false if a given LValue is a nil or false otherwise true.
func LVAsBool(v LValue) bool { return v != LNil && v != LFalse }

// LVAsString returns string representation of a given LValue
// if the LValue is a string or number, otherwise an empty string.
func LVAsString(v LValue) string {
	switch sn := v.(type) {
	case LString, LNumber:
		return sn.String()
	default:
		return ""
	}
}

// LVCanConvToString returns true if a given LValue is a string or number
// otherwise false.
func LVCanConvToString(v LValue) bool {
	switch v.(type) {
	case LString, LNumber:
		return true
	default:
		return false
	}
}

// LVAsNumber tries to convert a given LValue to a number.
func LVAsNumber(v LValue) LNumber {
	switch lv := v.(type) {
	case LNumber:
		return lv
	case LString:
		if num, err := parseNumber(string(lv)); err == nil {
			return num
		}
	}
	return LNumber(0)
}

// LVToNumber converts a number, or a string that is a numeral, to a
// number, as Lua's arithmetic does; ok is false for anything else.
// proctor: LVAsNumber answers 0 for both "0" and "x".
func LVToNumber(v LValue) (n LNumber, ok bool) {
	switch lv := v.(type) {
	case LNumber:
		return lv, true
	case LString:
		if num, err := parseNumber(string(lv)); err == nil {
			return num, true
		}
	}
	return 0, false
}

type LNilType struct{}

func (nl *LNilType) String() string   { return "nil" }
func (nl *LNilType) Type() LValueType { return LTNil }

var LNil = LValue(&LNilType{})

type LBool bool

func (bl LBool) String() string {
	if bool(bl) {
		return "true"
	}
	return "false"
}
func (bl LBool) Type() LValueType { return LTBool }

var LTrue = LBool(true)
var LFalse = LBool(false)

type LString string

func (st LString) String() string   { return string(st) }
func (st LString) Type() LValueType { return LTString }

// fmt.Formatter interface
func (st LString) Format(f fmt.State, c rune) {
	switch c {
	case 'd', 'i':
		if nm, err := parseNumber(string(st)); err != nil {
			defaultFormat(nm, f, 'd')
		} else {
			defaultFormat(string(st), f, 's')
		}
	default:
		defaultFormat(string(st), f, c)
	}
}

// proctor: a number is written as Lua 5.1 writes it (LUAI_NUMFFORMAT,
// "%.14g"; infinities and NaN as glibc's printf does). Upstream wrote
// every digit Go needs (0.1 + 0.2 was 0.30000000000000004, 2^53 was
// 9007199254740992 where Lua writes 0.3 and 9.007199254741e+15), and
// +Inf and NaN.
func (nm LNumber) String() string {
	if isInteger(nm) && nm > -1e14 && nm < 1e14 {
		if nm == 0 && math.Signbit(float64(nm)) {
			return "-0"
		}
		return strconv.FormatInt(int64(nm), 10)
	}
	f := float64(nm)
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case f != f:
		if math.Signbit(f) {
			return "-nan"
		}
		return "nan"
	}
	return strconv.FormatFloat(f, 'g', 14, 64)
}

func (nm LNumber) Type() LValueType { return LTNumber }

// fmt.Formatter interface
func (nm LNumber) Format(f fmt.State, c rune) {
	switch c {
	case 'q', 's':
		defaultFormat(nm.String(), f, c)
	case 'b', 'c', 'd', 'o', 'x', 'X', 'U':
		defaultFormat(int64(nm), f, c)
	case 'e', 'E', 'f', 'F', 'g', 'G':
		defaultFormat(float64(nm), f, c)
	case 'i':
		defaultFormat(int64(nm), f, 'd')
	default:
		if isInteger(nm) {
			defaultFormat(int64(nm), f, c)
		} else {
			defaultFormat(float64(nm), f, c)
		}
	}
}

type LTable struct {
	Metatable LValue

	array   []LValue
	strdict map[string]LValue
	strs    []strEntry // proctor: the string keys while there are few (see smallStrKeys)
	hash    *tableHash // proctor: the other keys and the key order (patch 73)
}

func (tb *LTable) String() string   { return fmt.Sprintf("table: %p", tb) }
func (tb *LTable) Type() LValueType { return LTTable }

type LFunction struct {
	IsG       bool
	Env       *LTable
	Proto     *FunctionProto
	GFunction LGFunction
	Upvalues  []*Upvalue
}
type LGFunction func(*LState) int

func (fn *LFunction) String() string   { return fmt.Sprintf("function: %p", fn) }
func (fn *LFunction) Type() LValueType { return LTFunction }

type Global struct {
	MainThread    *LState
	CurrentThread *LState
	Registry      *LTable
	Global        *LTable

	// proctor: the metatables of the types that are not tables or
	// userdata, by type (was a map: about 250 bytes of every state for
	// one entry, the string metatable).
	// proctor: nil until one is set, and shared with another state's
	// (ShareBuiltinMetatables) until this state sets its own: 144 bytes of
	// every state, for one entry a host gives them all.
	builtinMts    *[LTChannel + 1]LValue
	builtinShared bool
	tempFiles     *[]*os.File // proctor: nil until a temporary file is made (a pointer: Global is 64 bytes, not 80)
	gccount       int32
}

type LState struct {
	G      *Global
	Parent *LState
	Env    *LTable
	Panic  func(*LState)
	Dead   bool
	// proctor: the small fields together (they were spread between
	// words: 16 bytes of padding, a larger size class).
	wrapped bool
	suspOK  bool // see susp
	stop    int32
	Options Options

	reg          *registry
	stack        callFrameStack
	alloc        *allocator
	currentFrame *callFrame
	uvcache      *Upvalue
	// goCalls counts the VM loops running inside another on this thread
	// (callR from a builtin, a metamethod, an iterator, pcall); PCall puts
	// it back when it catches an error (proctor: see coYield).
	goCalls     int
	mainLoop    func(*LState, *callFrame)
	ctx         context.Context
	ctxCancelFn context.CancelFunc

	// proctor: a suspendable call (suspend.go). suspOK is true while Lua
	// code runs directly under it, so a Go function it calls may suspend.
	susp *suspension
}

func (ls *LState) String() string   { return fmt.Sprintf("thread: %p", ls) }
func (ls *LState) Type() LValueType { return LTThread }

type LUserData struct {
	Value     interface{}
	Env       *LTable
	Metatable LValue
}

func (ud *LUserData) String() string   { return fmt.Sprintf("userdata: %p", ud) }
func (ud *LUserData) Type() LValueType { return LTUserData }

type LChannel chan LValue

func (ch LChannel) String() string   { return fmt.Sprintf("channel: %p", ch) }
func (ch LChannel) Type() LValueType { return LTChannel }

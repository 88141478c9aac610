package lint

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/yuin/gopher-lua/ast"

	"github.com/proctor-run/proctor/internal/suggest"
	"github.com/proctor-run/proctor/lua"
)

// scope is one block's locals.
type scope struct {
	parent *scope
	names  map[string]*local
}

func (s *scope) lookup(name string) *local {
	for ; s != nil; s = s.parent {
		if l, ok := s.names[name]; ok {
			return l
		}
	}
	return nil
}

// local is one local variable. lib is the library it holds when it was
// bound to one (local pg = require("pg"), local s = string), typ the
// handle type when it was bound to what a function declares it returns
// (local bus = pg.open("app:bus"): a pg.scope); assigned says it was
// assigned again, so it may hold anything.
type local struct {
	lib, typ string
	assigned bool
}

// globalRead is a read of a name no local holds, judged once the whole
// script is seen (a function may read a global assigned further down).
type globalRead struct {
	name      string
	line, nth int // nth: which of the name's tokens on the line
	// selfRef: read in the body of the function expression that
	// `local name = function` assigns, which does not see name.
	selfRef bool
}

// memberRead is a read of lib.name, through a global or a local.
type memberRead struct {
	lib, name string
	via       *local // nil: through the global lib
	line, nth int
}

// methodRead is a method call on a handle of a known type: bus:join().
type methodRead struct {
	typ, name string
	line, nth int
}

// occurrence counts the names the walk meets on each line, so that a
// finding is placed at its own token (the syntax tree has no columns).
type occurrence struct {
	kind tokenKind
	line int
	name string
}

// walker walks one chunk, tracking scopes, and collects what it reads.
type walker struct {
	toks     *tokens
	globals  map[string]bool            // what the sandbox has as globals
	removed  map[string]bool            // what a full Lua has that the sandbox lacks
	libs     map[string]map[string]bool // library or module -> its names
	modules  map[string]bool            // runtime modules
	assigned map[string]bool            // globals the script assigns
	added    map[string]map[string]bool // library -> names the script sets in it (string.split = f)
	reads    []globalRead
	members  []memberRead
	methods  []methodRead
	requires []requireCall
	// Signatures, by "lib.func" or "type:method": the handle type a
	// function's first result is (when it is one of the host's types), and
	// the (0-based) arguments it takes as durations.
	returns   map[string]string
	durations map[string][]int
	maxArgs   map[string]int             // the most arguments a function takes; absent: any number
	typeFuncs map[string]map[string]bool // handle type -> its methods
	findings  []Finding                  // found on the way (duration literals)
	strNth    map[*ast.StringExpr]int    // which of its text's string tokens on its line
	occ       map[occurrence]int
	// defining are the names of the `local name = function` statements
	// whose function bodies the walk is in.
	defining []string
}

// seen counts one more occurrence of name on line and returns how many
// came before it.
func (w *walker) seen(kind tokenKind, line int, name string) int {
	k := occurrence{kind, line, name}
	n := w.occ[k]
	w.occ[k] = n + 1
	return n
}

func newWalker(s lua.Surface, toks *tokens) *walker {
	w := &walker{
		toks: toks, globals: map[string]bool{}, removed: map[string]bool{}, libs: map[string]map[string]bool{},
		modules: map[string]bool{}, assigned: map[string]bool{}, added: map[string]map[string]bool{},
		returns: map[string]string{}, durations: map[string][]int{}, maxArgs: map[string]int{}, typeFuncs: map[string]map[string]bool{},
		strNth: map[*ast.StringExpr]int{}, occ: map[occurrence]int{},
	}
	set := func(names []string) map[string]bool {
		m := make(map[string]bool, len(names))
		for _, n := range names {
			m[n] = true
		}
		return m
	}
	for _, n := range s.Base {
		w.globals[n] = true
	}
	for name, members := range s.Libraries {
		w.globals[name] = true
		w.libs[name] = set(members)
	}
	for _, m := range s.Globals {
		w.globals[m.Name] = true
		w.libs[m.Name] = set(s.Members[m.Name])
	}
	for _, m := range s.Modules {
		w.modules[m.Name] = true
		w.libs[m.Name] = set(s.Members[m.Name])
	}
	for _, n := range s.Removed {
		w.removed[n] = true
	}
	var types []*lua.Type
	for _, m := range append(slices.Clone(s.Globals), s.Modules...) {
		types = append(types, m.Types...)
	}
	for _, t := range types {
		ms := map[string]bool{}
		for _, f := range t.Funcs() {
			if !strings.HasPrefix(f.Name, "__") {
				ms[f.Name] = true
			}
		}
		w.typeFuncs[t.Name()] = ms
	}
	for _, m := range append(slices.Clone(s.Globals), s.Modules...) {
		for _, f := range m.Funcs {
			w.signature(m.Name+"."+f.Name, f)
		}
	}
	for _, t := range types {
		for _, f := range t.Funcs() {
			w.signature(t.Name()+":"+f.Name, f)
		}
	}
	return w
}

// signature records what the walk needs of f's declaration under key.
func (w *walker) signature(key string, f lua.Func) {
	params, results, err := f.Signature()
	if err != nil {
		return // the host refuses malformed signatures
	}
	for i, p := range params {
		if slices.Contains(strings.Split(p.Type, "|"), "duration") {
			w.durations[key] = append(w.durations[key], i)
		}
	}
	if !slices.ContainsFunc(params, func(p lua.Param) bool { return p.Name == "..." }) {
		w.maxArgs[key] = len(params)
	}
	if len(results) > 0 {
		for _, alt := range strings.Split(results[0], "|") {
			if w.typeFuncs[alt] != nil {
				w.returns[key] = alt
				break
			}
		}
	}
}

// block walks statements in a new scope whose locals start as given.
func (w *walker) block(stmts []ast.Stmt, sc *scope) *scope {
	inner := &scope{parent: sc, names: map[string]*local{}}
	for _, st := range stmts {
		w.stmt(st, inner)
	}
	return inner
}

func (w *walker) declare(sc *scope, name string, lib string) *local {
	l := &local{lib: lib}
	sc.names[name] = l
	return l
}

func (w *walker) stmt(st ast.Stmt, sc *scope) {
	switch s := st.(type) {
	case *ast.AssignStmt:
		for _, lhs := range s.Lhs {
			w.assign(lhs, sc)
		}
		w.exprs(s.Rhs, sc)
	case *ast.LocalAssignStmt:
		// local function f: f is visible in its own body; in a plain
		// local f = function it is not (the body sees the outer f), as
		// in C Lua.
		if s.Func {
			w.declare(sc, s.Names[0], "")
			w.function(s.Exprs[0].(*ast.FunctionExpr), sc, false)
			return
		}
		libs := make([]string, len(s.Names))
		types := make([]string, len(s.Names))
		for i, e := range s.Exprs {
			if _, fn := e.(*ast.FunctionExpr); fn && i < len(s.Names) {
				w.defining = append(w.defining, s.Names[i])
				w.expr(e, sc)
				w.defining = w.defining[:len(w.defining)-1]
			} else {
				w.expr(e, sc)
			}
			if i < len(libs) {
				libs[i] = w.libOf(e, sc)
				types[i] = w.typeOf(e, sc)
			}
		}
		for i, n := range s.Names {
			w.declare(sc, n, libs[i]).typ = types[i]
		}
	case *ast.FuncCallStmt:
		w.expr(s.Expr, sc)
	case *ast.DoBlockStmt:
		w.block(s.Stmts, sc)
	case *ast.WhileStmt:
		w.expr(s.Condition, sc)
		w.block(s.Stmts, sc)
	case *ast.RepeatStmt:
		// until sees the body's locals.
		inner := w.block(s.Stmts, sc)
		w.expr(s.Condition, inner)
	case *ast.IfStmt:
		w.expr(s.Condition, sc)
		w.block(s.Then, sc)
		w.block(s.Else, sc)
	case *ast.NumberForStmt:
		w.expr(s.Init, sc)
		w.expr(s.Limit, sc)
		if s.Step != nil {
			w.expr(s.Step, sc)
		}
		inner := &scope{parent: sc, names: map[string]*local{}}
		w.declare(inner, s.Name, "")
		w.block(s.Stmts, inner)
	case *ast.GenericForStmt:
		w.exprs(s.Exprs, sc)
		inner := &scope{parent: sc, names: map[string]*local{}}
		for _, n := range s.Names {
			w.declare(inner, n, "")
		}
		w.block(s.Stmts, inner)
	case *ast.FuncDefStmt:
		method := s.Name.Receiver != nil
		if method {
			// function a.b:m(): a is read, and a.b gains m.
			w.expr(s.Name.Receiver, sc)
			w.seen(tokMember, s.Name.Receiver.Line(), s.Name.Method)
			if lib := w.libOf(s.Name.Receiver, sc); lib != "" {
				w.add(lib, s.Name.Method)
			}
		} else {
			w.assign(s.Name.Func, sc)
		}
		w.function(s.Func, sc, method)
	case *ast.ReturnStmt:
		w.exprs(s.Exprs, sc)
	}
}

// assign walks the target of an assignment.
func (w *walker) assign(lhs ast.Expr, sc *scope) {
	switch t := lhs.(type) {
	case *ast.IdentExpr:
		w.seen(tokGlobal, t.Line(), t.Value)
		if l := sc.lookup(t.Value); l != nil {
			l.assigned = true
		} else {
			w.assigned[t.Value] = true
		}
	case *ast.AttrGetExpr:
		// Setting lib.name adds a name to the script's own view of lib.
		w.expr(t.Object, sc)
		if k, ok := t.Key.(*ast.StringExpr); ok {
			w.seen(tokMember, k.Line(), k.Value)
			if lib := w.libOf(t.Object, sc); lib != "" {
				w.add(lib, k.Value)
			}
		} else {
			w.expr(t.Key, sc)
		}
	default:
		w.expr(lhs, sc)
	}
}

func (w *walker) add(lib, name string) {
	if w.added[lib] == nil {
		w.added[lib] = map[string]bool{}
	}
	w.added[lib][name] = true
}

// function walks a function's body in a scope of its parameters.
func (w *walker) function(fn *ast.FunctionExpr, sc *scope, method bool) {
	inner := &scope{parent: sc, names: map[string]*local{}}
	if method {
		w.declare(inner, "self", "")
	}
	if fn.ParList != nil {
		for _, p := range fn.ParList.Names {
			w.declare(inner, p, "")
		}
	}
	w.block(fn.Stmts, inner)
}

func (w *walker) exprs(es []ast.Expr, sc *scope) {
	for _, e := range es {
		w.expr(e, sc)
	}
}

func (w *walker) expr(e ast.Expr, sc *scope) {
	switch x := e.(type) {
	case nil:
	case *ast.IdentExpr:
		nth := w.seen(tokGlobal, x.Line(), x.Value)
		if sc.lookup(x.Value) == nil && !w.globals[x.Value] {
			w.reads = append(w.reads, globalRead{name: x.Value, line: x.Line(), nth: nth, selfRef: slices.Contains(w.defining, x.Value)})
		}
	case *ast.AttrGetExpr:
		w.expr(x.Object, sc)
		if k, ok := x.Key.(*ast.StringExpr); ok {
			w.member(x.Object, k.Value, k.Line(), sc)
		} else {
			w.expr(x.Key, sc)
		}
	case *ast.StringExpr:
		w.strNth[x] = w.seen(tokString, x.Line(), x.Value)
	case *ast.FuncCallExpr:
		if x.Receiver != nil {
			w.expr(x.Receiver, sc)
			nth := w.member(x.Receiver, x.Method, x.Receiver.Line(), sc)
			if typ := w.typeOf(x.Receiver, sc); typ != "" {
				w.methods = append(w.methods, methodRead{typ: typ, name: x.Method, line: x.Receiver.Line(), nth: nth})
			}
		} else {
			w.expr(x.Func, sc)
		}
		w.exprs(x.Args, sc)
		w.require(x, sc)
		w.durationArgs(x, sc)
		w.arity(x, sc)
	case *ast.TableExpr:
		for _, f := range x.Fields {
			if _, str := f.Key.(*ast.StringExpr); !str {
				w.expr(f.Key, sc)
			}
			w.expr(f.Value, sc)
		}
	case *ast.FunctionExpr:
		w.function(x, sc, false)
	case *ast.LogicalOpExpr:
		w.expr(x.Lhs, sc)
		w.expr(x.Rhs, sc)
	case *ast.RelationalOpExpr:
		w.expr(x.Lhs, sc)
		w.expr(x.Rhs, sc)
	case *ast.StringConcatOpExpr:
		w.expr(x.Lhs, sc)
		w.expr(x.Rhs, sc)
	case *ast.ArithmeticOpExpr:
		w.expr(x.Lhs, sc)
		w.expr(x.Rhs, sc)
	case *ast.UnaryMinusOpExpr:
		w.expr(x.Expr, sc)
	case *ast.UnaryNotOpExpr:
		w.expr(x.Expr, sc)
	case *ast.UnaryLenOpExpr:
		w.expr(x.Expr, sc)
	}
}

// member records a read of obj.name when obj holds a library, and
// returns which of name's member tokens on line it is.
func (w *walker) member(obj ast.Expr, name string, line int, sc *scope) int {
	nth := w.seen(tokMember, line, name)
	id, ok := obj.(*ast.IdentExpr)
	if !ok {
		return nth
	}
	if l := sc.lookup(id.Value); l != nil {
		if l.lib != "" {
			w.members = append(w.members, memberRead{lib: l.lib, name: name, via: l, line: line, nth: nth})
		}
		return nth
	}
	if w.globals[id.Value] && w.libs[id.Value] != nil {
		w.members = append(w.members, memberRead{lib: id.Value, name: name, line: line, nth: nth})
	}
	return nth
}

// callKey returns the signature key of what call calls: "lib.func" for a
// function of a library or module, "type:method" for a method of a handle
// of a known type; "" when the walk cannot tell.
func (w *walker) callKey(call *ast.FuncCallExpr, sc *scope) string {
	if call.Receiver != nil {
		if typ := w.typeOf(call.Receiver, sc); typ != "" {
			return typ + ":" + call.Method
		}
		return ""
	}
	get, ok := call.Func.(*ast.AttrGetExpr)
	if !ok {
		return ""
	}
	k, ok := get.Key.(*ast.StringExpr)
	if !ok {
		return ""
	}
	if lib := w.libOf(get.Object, sc); lib != "" {
		return lib + "." + k.Value
	}
	return ""
}

// typeOf returns the handle type e holds: a local bound to one and not
// assigned since, or a call of a function declared to return one.
func (w *walker) typeOf(e ast.Expr, sc *scope) string {
	switch x := e.(type) {
	case *ast.IdentExpr:
		if l := sc.lookup(x.Value); l != nil && !l.assigned {
			return l.typ
		}
	case *ast.FuncCallExpr:
		if key := w.callKey(x, sc); key != "" {
			return w.returns[key]
		}
	}
	return ""
}

// arity reports a call that passes more arguments than its function
// takes (ch:receive(2000): receive takes no timeout, and the script
// waited for ever). A last argument that is a call or ... may be any
// number of values: only what is certain is counted.
func (w *walker) arity(call *ast.FuncCallExpr, sc *scope) {
	key := w.callKey(call, sc)
	most, ok := w.maxArgs[key]
	if !ok || len(call.Args) <= most {
		return
	}
	n := len(call.Args)
	switch call.Args[n-1].(type) {
	case *ast.FuncCallExpr, *ast.Comma3Expr:
		n-- // at least this many
	}
	if n <= most {
		return
	}
	// Placed at the function's name (the first of its name on the line).
	name, line := call.Method, call.Line()
	if call.Receiver != nil {
		line = call.Receiver.Line()
	} else if get, ok := call.Func.(*ast.AttrGetExpr); ok {
		if k, ok := get.Key.(*ast.StringExpr); ok {
			name, line = k.Value, k.Line()
		}
	}
	takes := fmt.Sprintf("at most %d arguments", most)
	switch most {
	case 0:
		takes = "no arguments"
	case 1:
		takes = "at most 1 argument"
	}
	w.findings = append(w.findings, Finding{Line: line, Col: w.toks.column(line, tokMember, name, 0),
		Msg: fmt.Sprintf("%s takes %s, got %d", key, takes, len(call.Args))})
}

// durationArgs checks the string literals a call passes where its
// function takes a duration: one the runtime would refuse is reported
// where it stands (time.sleep("1 sec")).
func (w *walker) durationArgs(call *ast.FuncCallExpr, sc *scope) {
	key := w.callKey(call, sc)
	for _, i := range w.durations[key] {
		if i >= len(call.Args) {
			continue
		}
		str, ok := call.Args[i].(*ast.StringExpr)
		if !ok {
			continue
		}
		if _, err := lua.ParseDuration(str.Value); err != nil {
			col := w.toks.column(str.Line(), tokString, str.Value, w.strNth[str])
			w.findings = append(w.findings, Finding{Line: str.Line(), Col: col,
				Msg: fmt.Sprintf("%s: argument #%d: %v", key, i+1, err)})
		}
	}
}

// libOf returns the library e holds: a global library not shadowed, a
// local bound to one, or require of a runtime module.
func (w *walker) libOf(e ast.Expr, sc *scope) string {
	switch x := e.(type) {
	case *ast.IdentExpr:
		if l := sc.lookup(x.Value); l != nil {
			return l.lib
		}
		if w.globals[x.Value] && w.libs[x.Value] != nil {
			return x.Value
		}
	case *ast.FuncCallExpr:
		if m, ok := requireOf(x, sc); ok && w.modules[m] {
			return m
		}
	}
	return ""
}

// requireOf returns the module a call requires: require("name") with
// require the global and name a literal.
func requireOf(call *ast.FuncCallExpr, sc *scope) (string, bool) {
	fn, ok := call.Func.(*ast.IdentExpr)
	if !ok || fn.Value != "require" || sc.lookup("require") != nil || len(call.Args) == 0 {
		return "", false
	}
	s, ok := call.Args[0].(*ast.StringExpr)
	if !ok {
		return "", false
	}
	return s.Value, true
}

func (w *walker) require(call *ast.FuncCallExpr, sc *scope) {
	m, ok := requireOf(call, sc)
	if !ok {
		return
	}
	line := call.Args[0].Line()
	col := w.toks.column(line, tokString, m, w.strNth[call.Args[0].(*ast.StringExpr)])
	w.requires = append(w.requires, requireCall{module: m, line: line, col: col})
}

// judge turns what the walk collected into findings, now that every
// assignment of the script is known.
func (w *walker) judge(file string) []Finding {
	var out []Finding
	for _, r := range w.reads {
		if w.assigned[r.name] {
			continue
		}
		col := w.toks.column(r.line, tokGlobal, r.name, r.nth)
		var msg string
		switch {
		case w.removed[r.name]:
			msg = fmt.Sprintf("%s is not available: the sandbox has no %s", r.name, strings.Join(w.removedList(), ", "))
		case w.modules[r.name]:
			msg = fmt.Sprintf("unknown global %q: %s is a module (local %s = require(%q))", r.name, r.name, r.name, r.name)
		case r.selfRef:
			msg = fmt.Sprintf("unknown global %q: in `local %s = function` the function does not see %s (write `local function %s` to call it from its own body)", r.name, r.name, r.name, r.name)
		default:
			msg = fmt.Sprintf("unknown global %q", r.name)
			if sug := suggest.Closest(r.name, w.globalList()); sug != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", sug)
			}
		}
		out = append(out, Finding{File: file, Line: r.line, Col: col, Msg: msg})
	}
	for _, m := range w.members {
		if (m.via != nil && m.via.assigned) || (m.via == nil && w.assigned[m.lib]) || w.libs[m.lib][m.name] || w.added[m.lib][m.name] {
			continue
		}
		col := w.toks.column(m.line, tokMember, m.name, m.nth)
		names := make([]string, 0, len(w.libs[m.lib]))
		for n := range w.libs[m.lib] {
			names = append(names, n)
		}
		slices.Sort(names)
		msg := fmt.Sprintf("%s.%s does not exist", m.lib, m.name)
		if sug := suggest.Closest(m.name, names); sug != "" {
			msg += fmt.Sprintf(" (did you mean %s.%s?)", m.lib, sug)
		}
		out = append(out, Finding{File: file, Line: m.line, Col: col, Msg: msg})
	}
	for _, m := range w.methods {
		if w.typeFuncs[m.typ][m.name] {
			continue
		}
		col := w.toks.column(m.line, tokMember, m.name, m.nth)
		msg := fmt.Sprintf("%s:%s does not exist", m.typ, m.name)
		if sug := suggest.Closest(m.name, slices.Sorted(maps.Keys(w.typeFuncs[m.typ]))); sug != "" {
			msg += fmt.Sprintf(" (did you mean %s:%s?)", m.typ, sug)
		}
		out = append(out, Finding{File: file, Line: m.line, Col: col, Msg: msg})
	}
	for _, f := range w.findings {
		f.File = file
		out = append(out, f)
	}
	return out
}

func (w *walker) globalList() []string {
	out := make([]string, 0, len(w.globals))
	for n := range w.globals {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// removedList names the best-known of what the sandbox lacks.
func (w *walker) removedList() []string {
	var out []string
	for _, n := range []string{"os", "io", "debug", "package", "load", "loadstring", "dofile", "loadfile"} {
		if w.removed[n] {
			out = append(out, n)
		}
	}
	return out
}

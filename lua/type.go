package lua

import (
	"fmt"
	"strings"
	"sync"

	lua "github.com/yuin/gopher-lua"
)

// Type is a kind of userdata handed to scripts (a channel, a message, a
// pg scope): its metatable is built once, in the template state, and
// shared read-only by every state, like a library. Funcs whose name starts
// with "__" are metamethods (__tostring, __index); the others are methods,
// called with a colon. A method the type lacks raises an error that names
// the type, the method and the nearest one it has (see missingMeta).
type Type struct {
	name    string
	funcs   []Func
	methods *library
	once    sync.Once
	meta    *lua.LTable
}

// NewType returns the type name (as errors and documentation call it:
// "pg scope", "message") with funcs. Declare it once, as a package variable.
//
// A Func without a name, a function or a description, with a malformed
// signature, or named twice panics: NewType is called at package
// initialisation, where the declaration's author sees it at once.
func NewType(name string, funcs ...Func) *Type {
	if err := checkFuncs(funcs); err != nil {
		panic(fmt.Sprintf("lua: type %s: %v", name, err))
	}
	t := &Type{name: name, funcs: funcs}
	var methods []Func
	for _, f := range funcs {
		if !strings.HasPrefix(f.Name, "__") {
			methods = append(methods, f)
		}
	}
	// A type without methods still gets a table of them: indexing a
	// handle for one then says that it has none.
	t.methods = newLibrary(strings.ReplaceAll(name, ".", " "), "method", methods, nil)
	return t
}

// Name returns the type's name.
func (t *Type) Name() string { return t.name }

// Funcs returns the type's methods and metamethods, as declared.
func (t *Type) Funcs() []Func { return t.funcs }

// New returns a userdata of this type holding v. A module keeps what the
// script's handle stands for in v and reads it back in its methods from
// the userdata in argument 1.
func (t *Type) New(L *lua.LState, v any) *lua.LUserData {
	ud := L.NewUserData()
	ud.Value = v
	ud.Metatable = t.metatable()
	return ud
}

// Init is New for a userdata ud that the caller embeds in v, so that the
// handle and what it stands for take one allocation: a value made per
// message, say.
func (t *Type) Init(L *lua.LState, ud *lua.LUserData, v any) {
	L.InitUserData(ud)
	ud.Value = v
	ud.Metatable = t.metatable()
}

func (t *Type) metatable() *lua.LTable {
	t.once.Do(func() {
		methods := t.methods.shared()
		tmpl := template()
		tmplMu.Lock()
		defer tmplMu.Unlock()
		m := protectedMeta(tmpl.L, methods)
		for _, f := range t.funcs {
			if strings.HasPrefix(f.Name, "__") {
				m.RawSetString(f.Name, tmpl.L.NewFunction(f.Fn))
			}
		}
		t.meta = m
	})
	return t.meta
}

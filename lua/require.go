package lua

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// Module is a runtime module: what require(Name) returns to a script, a
// table of Go functions. A host loads the modules its Options name (and
// json and errors, which every host has); a module that binds a kind lives in a
// package of its own (lua/modules/pg, …) and hands out its Module from an
// exported function, so that a program links only the modules it wires.
type Module struct {
	// Name is what scripts require: letters, digits, _ and dots.
	Name string
	// Doc says in one line what the module is for.
	Doc string
	// Funcs are the module table's functions. They are shared by every
	// state, so they find their caller with ProcessOf(L).
	Funcs []Func
	// Consts are the module table's string constants (errors.NOT_FOUND).
	Consts []Const
	// Types are the userdata types its functions hand to scripts (a pg
	// scope, a subscription), listed so that documentation and editor
	// stubs can describe their methods.
	Types []*Type
	// Shapes are the tables of known fields its functions take or return
	// (a child spec), listed so that the editor stubs declare their fields.
	Shapes []Shape
}

// Const is a string constant of a module's table, declared with what a
// reader needs to know of it.
type Const struct {
	Name, Value string
	// Doc says in one line what it stands for. Required.
	Doc string
}

// builtinModules are the modules every host has: they bind no kind.
func builtinModules() []Module { return []Module{jsonModule, errorsModule} }

// Check reports what is wrong with m's declaration: its name, or a
// function without a name, a Go function or a one-line Doc, with a
// malformed signature, or declared twice.
func (m Module) Check() error {
	var errs []error
	if !moduleNameRE.MatchString(m.Name) {
		errs = append(errs, fmt.Errorf("invalid module name %q (letters, digits, _ and dots)", m.Name))
	}
	if strings.TrimSpace(m.Doc) == "" || strings.Contains(m.Doc, "\n") {
		errs = append(errs, errors.New("its description (Doc) must be one line"))
	}
	if err := checkFuncs(m.Funcs); err != nil {
		errs = append(errs, err)
	}
	for _, c := range m.Consts {
		switch {
		case !identRE.MatchString(c.Name):
			errs = append(errs, fmt.Errorf("constant %q: not a name", c.Name))
		case slices.ContainsFunc(m.Funcs, func(f Func) bool { return f.Name == c.Name }):
			errs = append(errs, fmt.Errorf("%s: both a function and a constant", c.Name))
		case strings.TrimSpace(c.Doc) == "" || strings.Contains(c.Doc, "\n"):
			errs = append(errs, fmt.Errorf("constant %s: its description (Doc) must be one line", c.Name))
		}
	}
	for _, t := range m.Types {
		if t == nil {
			errs = append(errs, errors.New("a nil Type"))
		}
	}
	for _, sh := range m.Shapes {
		if err := sh.check(); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("module %s: %w", m.Name, err)
	}
	return nil
}

// loadModules checks mods and builds the host's table of modules: the
// built-in ones, then mods. A bad declaration is a programming error of
// the embedder, reported when the host is made.
func loadModules(mods []Module) (map[string]*library, []Module) {
	all := append(builtinModules(), mods...)
	libs := make(map[string]*library, len(all))
	for _, m := range all {
		if err := m.Check(); err != nil {
			panic("lua: " + err.Error())
		}
		if _, dup := libs[m.Name]; dup {
			panic(fmt.Sprintf("lua: module %q given twice", m.Name))
		}
		libs[m.Name] = newLibrary(m.Name, "function", m.Funcs, m.Consts)
	}
	slices.SortFunc(all, func(a, b Module) int { return strings.Compare(a.Name, b.Name) })
	return libs, all
}

// Modules returns the runtime modules scripts of this host may require,
// sorted by name.
func (h *Host) Modules() []Module { return slices.Clone(h.moduleList) }

// ModuleNames returns the names of the runtime modules, sorted.
func (h *Host) ModuleNames() []string {
	names := make([]string, len(h.moduleList))
	for i, m := range h.moduleList {
		names[i] = m.Name
	}
	return names
}

// luaRequire loads a runtime module or one of the entry's own modules,
// once per process.
func luaRequire(L *lua.LState) int {
	p := ProcessOf(L)
	name := L.CheckString(1)
	if v, ok := p.loaded.get(name); ok {
		L.Push(v)
		return 1
	}
	var result lua.LValue
	if lib, ok := p.host.modules[name]; ok {
		result = lib.proxy(L)
	} else if c, ok := p.spec.modules[name]; ok {
		m := p.lazy()
		if m.loading[name] {
			L.RaiseError("require %q: circular require", name)
		}
		if m.loading == nil {
			m.loading = map[string]bool{}
		}
		m.loading[name] = true
		func() {
			// A module that raises is not left marked as loading: a
			// later require must report its error again, not a cycle.
			defer delete(m.loading, name)
			L.Push(L.NewFunctionFromProto(c.Proto))
			L.Push(lua.LString(name))
			L.Call(1, 1)
		}()
		result = L.Get(-1)
		L.Pop(1)
		if result == lua.LNil {
			result = lua.LTrue
		}
	} else {
		names := p.host.ModuleNames()
		for n := range p.spec.modules {
			names = append(names, n)
		}
		L.RaiseError("require %q: no such module (available: %s)", name, strings.Join(names, ", "))
	}
	p.loaded = append(p.loaded, loadedModule{name, result})
	L.Push(result)
	return 1
}

// requireCache is a process's loaded modules, in the order they were
// first required. A process requires a few modules, each once per
// name: a list looked through is a sixth of the smallest Go map, and an
// idle process is mostly such small things.
type requireCache []loadedModule

type loadedModule struct {
	name string
	v    lua.LValue
}

func (c requireCache) get(name string) (lua.LValue, bool) {
	for i := range c {
		if c[i].name == name {
			return c[i].v, true
		}
	}
	return nil, false
}

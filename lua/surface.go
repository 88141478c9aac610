package lua

import (
	"slices"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// Surface is what the scripts of a host see: the globals of the sandbox
// and the modules require finds. Editor stubs and the lint of `runner
// validate` read it, so they describe the environment the runtime
// builds, not a copy of it that could drift.
type Surface struct {
	// Base are the base functions and values a script has as globals
	// (print, pairs, require, _VERSION, …), sorted.
	Base []string
	// Libraries are the standard libraries a script has (string, table,
	// math, coroutine), with the names each holds, sorted.
	Libraries map[string][]string
	// Globals are the host's global libraries (process, channel, time,
	// log) and Modules the runtime modules require finds, as declared,
	// each sorted by name.
	Globals, Modules []Module
	// Members are the names the table of each global library and module
	// holds, by its name, sorted: what a script can reach in it.
	Members map[string][]string
	// Consts are the string values among them (a module's constants), by
	// library and name.
	Consts map[string]map[string]string
	// Removed are the names a full Lua state has as globals that the
	// sandbox leaves out (os, io, debug, load, dofile, …), sorted.
	Removed []string
}

// Surface returns what the host's scripts see.
func (h *Host) Surface() Surface {
	t := template()
	s := Surface{Libraries: map[string][]string{}, Members: map[string][]string{}, Consts: map[string]map[string]string{}}
	t.globals.ForEach(func(k, _ lua.LValue) {
		if name, ok := k.(lua.LString); ok {
			s.Base = append(s.Base, string(name))
		}
	})
	slices.Sort(s.Base)
	for name, meta := range t.libs {
		if lib, ok := meta.RawGetString("__index").(*lua.LTable); ok {
			s.Libraries[name] = tableKeys(lib)
		}
	}
	s.Globals = globalModules()
	slices.SortFunc(s.Globals, func(a, b Module) int { return strings.Compare(a.Name, b.Name) })
	s.Modules = h.Modules()
	for _, m := range s.Globals {
		s.addMembers(m.Name, h.globals[m.Name].shared())
	}
	for _, m := range s.Modules {
		s.addMembers(m.Name, h.modules[m.Name].shared())
	}
	// What a full state has that a script lacks.
	full := lua.NewState()
	defer full.Close()
	full.G.Global.ForEach(func(k, _ lua.LValue) {
		name, ok := k.(lua.LString)
		if !ok {
			return
		}
		n := string(name)
		if _, lib := s.Libraries[n]; lib || slices.Contains(s.Base, n) || s.Members[n] != nil {
			return
		}
		s.Removed = append(s.Removed, n)
	})
	slices.Sort(s.Removed)
	return s
}

func (s *Surface) addMembers(name string, t *lua.LTable) {
	s.Members[name] = tableKeys(t)
	t.ForEach(func(k, v lua.LValue) {
		key, ok := k.(lua.LString)
		val, isStr := v.(lua.LString)
		if !ok || !isStr {
			return
		}
		if s.Consts[name] == nil {
			s.Consts[name] = map[string]string{}
		}
		s.Consts[name][string(key)] = string(val)
	})
}

// tableKeys returns the string keys of t, sorted.
func tableKeys(t *lua.LTable) []string {
	var out []string
	t.ForEach(func(k, _ lua.LValue) {
		if name, ok := k.(lua.LString); ok {
			out = append(out, string(name))
		}
	})
	slices.Sort(out)
	return out
}

package lua

import (
	"fmt"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// A spawner is process.with_options' answer, Wippy's SpawnBuilder: spawn
// options kept apart from the entry's arguments. Its options are the
// name the new process is registered under before it runs (and so before
// its init): a name another process holds fails the start with an
// invalid error; and on_reload: "upgrade" has the process offered its
// entry's new code after a reload (upgrade.go), as its entry's own
// on_reload: upgrade does. Spawners are immutable;
// with_name returns a new one.

type spawnOptions struct {
	name string
	// onReload: ReloadUpgrade offers the process its entry's new code
	// after a reload (see upgrade.go); otherwise it keeps its old code,
	// as every process a script spawned outside a supervisor does.
	onReload string
}

var spawnerType = NewType("spawner",
	Func{Name: "spawn", Fn: spawnerSpawn, Doc: "process.spawn with the spawner's options.",
		Params: "entry_id: string, ...: any", Results: "pid|nil, error?"},
	Func{Name: "spawn_monitored", Fn: spawnerSpawnMonitored, Doc: "process.spawn_monitored with the spawner's options.",
		Params: "entry_id: string, ...: any", Results: "pid|nil, error?"},
	Func{Name: "spawn_linked", Fn: spawnerSpawnLinked, Doc: "process.spawn_linked with the spawner's options.",
		Params: "entry_id: string, ...: any", Results: "pid|nil, error?"},
	Func{Name: "with_name", Fn: spawnerWithName, Doc: "A spawner like this one whose processes are registered under name.",
		Params: "name: string", Results: "spawner"},
)

var spawnOptionNames = []string{"name", "on_reload"}

// process.with_options{name = …, on_reload = …} --> spawner
func procWithOptions(L *lua.LState) int {
	t := L.CheckTable(1)
	var o spawnOptions
	t.ForEach(func(k, v lua.LValue) {
		ks, _ := k.(lua.LString)
		switch ks {
		case "name":
			s, ok := v.(lua.LString)
			if !ok {
				L.ArgError(1, "option name must be a string, got "+v.Type().String())
			}
			o.name = checkSpawnName(L, 1, string(s))
		case "on_reload":
			s, _ := v.(lua.LString)
			if s != ReloadUpgrade {
				L.ArgError(1, fmt.Sprintf("option on_reload must be \"upgrade\" (a process a script spawns keeps its code otherwise), got %s", lua.LVAsString(v)))
			}
			o.onReload = string(s)
		default:
			L.ArgError(1, missingMessage("process.with_options", "option", lua.LVAsString(k), spawnOptionNames))
		}
	})
	L.Push(spawnerType.New(L, o))
	return 1
}

// checkSpawnName refuses what process.register refuses: names with ':'
// are the entries'.
func checkSpawnName(L *lua.LState, n int, name string) string {
	if name == "" || strings.Contains(name, ":") {
		L.ArgError(n, fmt.Sprintf("name %q: a name may not be empty or hold ':' (reserved for entries, namespace:entry)", name))
	}
	return name
}

func checkSpawner(L *lua.LState) spawnOptions {
	if ud, ok := L.Get(1).(*lua.LUserData); ok {
		if o, ok := ud.Value.(spawnOptions); ok {
			return o
		}
	}
	L.ArgError(1, "spawner expected (use spawner:method())")
	return spawnOptions{}
}

func spawnerSpawn(L *lua.LState) int {
	return spawnWith(L, 2, spawnPlain, checkSpawner(L))
}

func spawnerSpawnMonitored(L *lua.LState) int {
	return spawnWith(L, 2, spawnMonitored, checkSpawner(L))
}

func spawnerSpawnLinked(L *lua.LState) int {
	return spawnWith(L, 2, spawnLinked, checkSpawner(L))
}

func spawnerWithName(L *lua.LState) int {
	o := checkSpawner(L)
	o.name = checkSpawnName(L, 2, CheckLabel(L, 2, "a name"))
	// The new spawner shares this one's metatable (spawnerType.New would
	// make an initialization cycle: the type's methods would refer to it).
	ud := L.NewUserData()
	ud.Value, ud.Metatable = o, L.Get(1).(*lua.LUserData).Metatable
	L.Push(ud)
	return 1
}

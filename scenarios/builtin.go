package scenarios

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"sync"
)

//go:embed builtin/*.yaml
var builtinFS embed.FS

// BuiltinInfo names a built-in scenario.
type BuiltinInfo struct {
	Name        string
	Description string
	Tags        []string
}

var builtinOnce = sync.OnceValues(loadBuiltins)

type builtinSet struct {
	infos []BuiltinInfo
	src   map[string][]byte
}

func loadBuiltins() (*builtinSet, error) {
	set := &builtinSet{src: map[string][]byte{}}
	entries, err := fs.ReadDir(builtinFS, "builtin")
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		name := strings.TrimSuffix(e.Name(), ".yaml")
		src, err := builtinFS.ReadFile(path.Join("builtin", e.Name()))
		if err != nil {
			return nil, err
		}
		sc, err := load("builtin/"+e.Name(), src)
		if err != nil {
			return nil, fmt.Errorf("built-in scenario %s: %w", name, err)
		}
		if sc.Name != name {
			return nil, fmt.Errorf("built-in scenario file %s names itself %q", e.Name(), sc.Name)
		}
		set.src[name] = src
		set.infos = append(set.infos, BuiltinInfo{Name: name, Description: sc.Description, Tags: sc.Tags})
	}
	slices.SortFunc(set.infos, func(a, b BuiltinInfo) int { return strings.Compare(a.Name, b.Name) })
	return set, nil
}

// Builtins lists the built-in scenarios, sorted by name.
func Builtins() []BuiltinInfo {
	set, err := builtinOnce()
	if err != nil {
		panic(err) // the embedded files are checked by the tests
	}
	return set.infos
}

// Builtin loads a fresh copy of a built-in scenario. Every call returns new
// agents and scripts, so runs never share state.
func Builtin(name string) (*Scenario, error) {
	set, err := builtinOnce()
	if err != nil {
		return nil, err
	}
	src, ok := set.src[name]
	if !ok {
		names := make([]string, len(set.infos))
		for i, in := range set.infos {
			names[i] = in.Name
		}
		return nil, fmt.Errorf("no built-in scenario %q%s", name, suggest(name, names))
	}
	sc, err := load("builtin:"+name, src)
	if err != nil {
		return nil, err
	}
	return sc, nil
}

// BuiltinSource returns the YAML of a built-in scenario.
func BuiltinSource(name string) ([]byte, bool) {
	set, err := builtinOnce()
	if err != nil {
		return nil, false
	}
	src, ok := set.src[name]
	return src, ok
}

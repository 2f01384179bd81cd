package scenarios

import (
	"bytes"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"sync"
)

//go:embed builtin/*.yaml
var builtinEmbed embed.FS

// builtinFiles is where the built-ins are read from: the files embedded in
// the binary (the package's tests put others in their place).
var builtinFiles fs.FS = builtinEmbed

// BuiltinInfo names a built-in scenario.
type BuiltinInfo struct {
	Name        string
	Description string
	Tags        []string
}

// The built-ins are read in two steps, each at most once: their files (by
// name, which is all that Builtin and BuiltinSource need), and, for
// Builtins, each file's header. Neither decodes a built-in's agents,
// scripts or expectations: a command that lists the built-ins or runs one
// of them does not pay for parsing the others.
var (
	builtinSrcOnce  = sync.OnceValues(readBuiltins)
	builtinInfoOnce = sync.OnceValues(builtinInfos)
)

// builtinSet is the built-ins' files by name, and their names sorted.
type builtinSet struct {
	names []string
	src   map[string][]byte
}

func readBuiltins() (*builtinSet, error) {
	set := &builtinSet{src: map[string][]byte{}}
	entries, err := fs.ReadDir(builtinFiles, "builtin")
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".yaml")
		if !ok {
			continue
		}
		src, err := fs.ReadFile(builtinFiles, path.Join("builtin", e.Name()))
		if err != nil {
			return nil, err
		}
		set.src[name] = src
		set.names = append(set.names, name)
	}
	slices.Sort(set.names)
	return set, nil
}

func builtinInfos() ([]BuiltinInfo, error) {
	set, err := builtinSrcOnce()
	if err != nil {
		return nil, err
	}
	infos := make([]BuiltinInfo, 0, len(set.names))
	for _, name := range set.names {
		in, err := headerInfo("builtin/"+name+".yaml", set.src[name])
		if err != nil {
			return nil, fmt.Errorf("built-in scenario %s: %w", name, err)
		}
		if in.Name != name {
			return nil, fmt.Errorf("built-in scenario file %s.yaml names itself %q", name, in.Name)
		}
		infos = append(infos, in)
	}
	return infos, nil
}

// headerKeys are the keys of a scenario's header: what Builtins reports.
var headerKeys = []string{"name", "description", "tags"}

// headerInfo reads a scenario's name, description and tags from its header,
// the lines before its first top-level key that is not one of headerKeys,
// and only from there. A header that does not read cleanly is reported as
// the whole file's load reports it, at its line and column.
func headerInfo(file string, src []byte) (BuiltinInfo, error) {
	root, err := parseYAML(header(src))
	if err == nil && root.kind == mapNode {
		d := &decoder{file: file}
		f := d.fields(root, "the scenario", headerKeys...)
		in := BuiltinInfo{Name: d.str(f["name"], "name"), Description: d.str(f["description"], "description"), Tags: d.strs(f["tags"], "tags")}
		if d.err() == nil && in.Name != "" {
			return in, nil
		}
	}
	sc, err := load(file, src)
	if err != nil {
		return BuiltinInfo{}, err
	}
	return BuiltinInfo{Name: sc.Name, Description: sc.Description, Tags: sc.Tags}, nil
}

// header cuts src before the first line that starts a top-level key other
// than the header's keys (comments, blank lines and a description's
// continuation lines stay in).
func header(src []byte) []byte {
	for i := 0; i < len(src); {
		line := src[i:]
		if j := bytes.IndexByte(line, '\n'); j >= 0 {
			line = line[:j+1]
		}
		if c := line[0]; c >= 'a' && c <= 'z' {
			key, _, _ := bytes.Cut(line, []byte(":"))
			if !slices.Contains(headerKeys, string(key)) {
				return src[:i]
			}
		}
		i += len(line)
	}
	return src
}

// Builtins lists the built-in scenarios, sorted by name.
func Builtins() []BuiltinInfo {
	infos, err := builtinInfoOnce()
	if err != nil {
		panic(err) // the embedded files are checked by the tests
	}
	return infos
}

// Builtin loads a fresh copy of a built-in scenario. Every call returns new
// agents and scripts, so runs never share state.
func Builtin(name string) (*Scenario, error) {
	set, err := builtinSrcOnce()
	if err != nil {
		return nil, err
	}
	src, ok := set.src[name]
	if !ok {
		return nil, fmt.Errorf("no built-in scenario %q%s", name, suggest(name, set.names))
	}
	sc, err := load("builtin:"+name, src)
	if err != nil {
		return nil, err
	}
	return sc, nil
}

// BuiltinSource returns the YAML of a built-in scenario.
func BuiltinSource(name string) ([]byte, bool) {
	set, err := builtinSrcOnce()
	if err != nil {
		return nil, false
	}
	src, ok := set.src[name]
	return src, ok
}

package scenarios

import (
	"io/fs"
	"sync"
)

// UseBuiltinFiles reads the built-ins from fsys until restore is called.
func UseBuiltinFiles(fsys fs.FS) (restore func()) {
	files, src, infos := builtinFiles, builtinSrcOnce, builtinInfoOnce
	builtinFiles = fsys
	builtinSrcOnce, builtinInfoOnce = sync.OnceValues(readBuiltins), sync.OnceValues(builtinInfos)
	return func() { builtinFiles, builtinSrcOnce, builtinInfoOnce = files, src, infos }
}

// Unnamed is unnamed: the expectation a Named wraps, for the specs.
func Unnamed(e Expectation) Expectation { return unnamed(e) }

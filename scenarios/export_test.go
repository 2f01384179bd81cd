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

// Command crux-sim runs, fuzzes, records and replays scenarios of background
// agent behaviour. Every verb is a thin call into the library packages.
package main

import (
	"os"
)

func main() {
	os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr))
}

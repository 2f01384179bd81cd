// Command crux-sim runs, fuzzes, records and replays scenarios of background
// agent behaviour. Every verb is a thin call into the library packages.
package main

import (
	"os"
)

func main() {
	if _, worker := os.LookupEnv(fuzzWorkerEnv); worker {
		os.Exit(fuzzWorker(os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr))
}

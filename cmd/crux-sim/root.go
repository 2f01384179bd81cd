package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

// Exit codes.
const (
	exitOK       = 0 // every expectation held
	exitFailed   = 1 // an expectation or invariant failed
	exitBadUsage = 2 // bad usage or bad input
)

// usageError is bad usage or bad input: exit 2.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error { return &usageError{fmt.Errorf(format, args...)} }

// failedError means the run happened and something did not hold: exit 1.
var errFailed = errors.New("an expectation or invariant failed")

// Main runs the CLI with arguments and returns the exit code. It is what
// main calls, and what the CLI's tests call.
func Main(args []string, stdout, stderr io.Writer) int {
	root := newRoot(stdout, stderr)
	root.SetArgs(args)
	err := root.Execute()
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, errFailed):
		return exitFailed
	default:
		var ue *usageError
		if !errors.As(err, &ue) {
			// cobra's own errors (unknown command, bad flag) are usage errors too.
			fmt.Fprintln(stderr, "crux-sim:", err)
			return exitBadUsage
		}
		fmt.Fprintln(stderr, "crux-sim:", err)
		return exitBadUsage
	}
}

func newRoot(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "crux-sim",
		Short: "Test and simulate background agent behaviour",
		Long: `crux-sim runs scenarios of LLM coordinators that start child agents in the
background, on a scripted provider, under a seeded deterministic scheduler
with virtual time, and checks what the model saw at every step.

Run a built-in scenario with no files and no API key:

  crux-sim run research-coordinator

Exit codes: 0 every expectation held; 1 an expectation or invariant failed;
2 bad usage or bad input.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(newListCmd(), newRunCmd(), newFuzzCmd(), newRecordCmd(), newReplayCmd())
	root.AddCommand(newReportCmd())
	return root
}

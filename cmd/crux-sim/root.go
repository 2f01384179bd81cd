package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/crux-sim/crux-sim/core/trace"
	"github.com/crux-sim/crux-sim/harness"
	"github.com/crux-sim/crux-sim/internal/buildinfo"
	"github.com/crux-sim/crux-sim/scenarios"
)

// Exit codes.
const (
	exitOK       = 0 // every expectation held
	exitFailed   = 1 // an expectation or invariant failed
	exitBadUsage = 2 // bad usage or bad input
)

// usageError is bad usage or bad input: exit 2.
type usageError struct{ err error }

// badInput is every problem with the scenarios named on the command line:
// exit 2. Problems in files already name the file, line and column, and are
// printed as they are, one per line, like a compiler's.
type badInput struct{ problems []error }

func (e *badInput) Error() string { return errors.Join(e.problems...).Error() }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error { return &usageError{fmt.Errorf(format, args...)} }

// failedError means the run happened and something did not hold: exit 1.
var errFailed = errors.New("an expectation or invariant failed")

// Main runs the CLI with arguments and returns the exit code. It is what
// main calls, and what the CLI's tests call.
func Main(args []string, stdout, stderr io.Writer) int {
	return MainWithInput(args, os.Stdin, stdout, stderr)
}

// MainWithInput is Main with a standard input of the caller's (where
// "crux-sim run -" reads its scenario).
func MainWithInput(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := newRoot(stdout, stderr)
	root.SetIn(stdin)
	root.SetArgs(args)
	err := unknownVerb(root, args)
	if err == nil {
		err = root.Execute()
	}
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, errFailed):
		return exitFailed
	default:
		// Usage errors, bad input and cobra's own errors (unknown
		// command, bad flag) all exit 2.
		var bad *badInput
		if errors.As(err, &bad) {
			for _, p := range bad.problems {
				var le *scenarios.LoadError
				if errors.As(p, &le) {
					fmt.Fprintln(stderr, le)
				} else {
					fmt.Fprintln(stderr, "crux-sim:", shownError(p))
				}
			}
			return exitBadUsage
		}
		fmt.Fprintln(stderr, "crux-sim:", shownError(err))
		return exitBadUsage
	}
}

// shownError is an error as it reaches the terminal: what it quotes of the
// command line or of a file (a path, a name) with every control character
// escaped, line by line, so that no input can paint the terminal. (A
// *scenarios.LoadError escapes its own problems.)
func shownError(err error) string {
	lines := strings.Split(err.Error(), "\n")
	for i, l := range lines {
		lines[i] = trace.EscapeControls(l)
	}
	return strings.Join(lines, "\n")
}

// The limits --max-file-size replaces, restored for every command (the
// tests run many in one process).
var defaultScenarioSize, defaultScheduleSize = scenarios.MaxFileSize, harness.MaxScheduleSize

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
	var maxFile sizeFlag
	root.PersistentFlags().Var(&maxFile, "max-file-size", "the largest scenario or schedule file to read, in bytes or with a KiB, MiB or GiB suffix (default: 4MiB for a scenario, 64MiB for a schedule)")
	root.PersistentPreRunE = func(cmd *cobra.Command, args []string) error {
		if maxFile > 0 {
			scenarios.MaxFileSize, harness.MaxScheduleSize = int64(maxFile), int64(maxFile)
		} else {
			scenarios.MaxFileSize, harness.MaxScheduleSize = defaultScenarioSize, defaultScheduleSize
		}
		return nil
	}
	root.Version = buildinfo.Read().String()
	root.SetVersionTemplate("crux-sim {{.Version}}\n")
	root.SetFlagErrorFunc(flagError)
	root.DisableSuggestions = true // unknownVerb suggests, as the loader does
	root.AddCommand(newListCmd(), newShowCmd(), newRunCmd(), newFuzzCmd(), newRecordCmd(), newReplayCmd())
	root.AddCommand(newReportCmd(), newServeCmd())
	return root
}

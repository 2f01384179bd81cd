package main

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/crux-sim/crux-sim/internal/didyoumean"
)

// sizeFlag is a limit on the bytes a file may have. Every size flag of the
// CLI (--max-file-size, --max-cassette-size) is one, so they all take the
// same syntax: a byte count, or a number with a KiB, MiB or GiB suffix.
// Zero means unset: the limit's own default applies.
type sizeFlag int64

func (s *sizeFlag) String() string {
	if *s == 0 {
		return ""
	}
	return formatSize(int64(*s))
}

func (s *sizeFlag) Set(v string) error {
	n, err := parseSize(v)
	if err != nil {
		return err
	}
	*s = sizeFlag(n)
	return nil
}

func (s *sizeFlag) Type() string { return "size" }

var sizeUnits = []struct {
	suffix string
	mult   int64
}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}}

// parseSize reads a byte count such as 1048576, 512KiB, 64MiB or 1GiB.
func parseSize(s string) (int64, error) {
	num, mult := strings.TrimSpace(s), int64(1)
	for _, u := range sizeUnits {
		if n, ok := strings.CutSuffix(num, u.suffix); ok {
			num, mult = strings.TrimSpace(n), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n <= 0 || n > math.MaxInt64/mult {
		return 0, fmt.Errorf("%q is not a positive size, such as 1048576 (bytes), 512KiB, 64MiB or 1GiB", s)
	}
	return n * mult, nil
}

// formatSize writes a size the way parseSize reads it, in the largest unit
// that divides it.
func formatSize(n int64) string {
	for _, u := range sizeUnits {
		if n%u.mult == 0 {
			return strconv.FormatInt(n/u.mult, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10)
}

// flagError is cobra's hook for a flag that does not parse: an unknown flag
// gets the closest flag the command takes, as a mistyped verb gets the
// closest verb.
func flagError(cmd *cobra.Command, err error) error {
	var ne *pflag.NotExistError
	if !errors.As(err, &ne) {
		return usagef("%v; see crux-sim %s --help", err, cmd.Name())
	}
	var names []string
	add := func(f *pflag.Flag) {
		if !f.Hidden {
			names = append(names, f.Name)
		}
	}
	cmd.Flags().VisitAll(add)
	cmd.InheritedFlags().VisitAll(add)
	slices.Sort(names)
	name := ne.GetSpecifiedName()
	if meant := didyoumean.Closest(name, names); meant != "" && name != "" {
		return usagef("%v (did you mean --%s?); see %s --help", err, meant, cmd.CommandPath())
	}
	return usagef("%v; see %s --help for the flags it takes", err, cmd.CommandPath())
}

// unknownVerb returns the error for a first argument that names no verb,
// with the closest verb, or nil when it names one (or is a flag). The
// argument after help (a verb) and after completion (a shell) is checked
// the same way: cobra would print help and exit 0.
func unknownVerb(root *cobra.Command, args []string) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return nil
	}
	verbs := []string{"help", "completion"}
	known := false
	for _, c := range root.Commands() {
		if c.Name() == args[0] || slices.Contains(c.Aliases, args[0]) {
			known = true
		}
		if !c.Hidden {
			verbs = append(verbs, c.Name())
		}
	}
	slices.Sort(verbs)
	if !known && !slices.Contains(verbs, args[0]) {
		if meant := didyoumean.Closest(args[0], verbs); meant != "" {
			return usagef("unknown command %q (did you mean %q?); see crux-sim --help", args[0], meant)
		}
		return usagef("unknown command %q; the commands are %s (see crux-sim --help)", args[0], strings.Join(verbs, ", "))
	}
	if len(args) < 2 || strings.HasPrefix(args[1], "-") {
		return nil
	}
	switch topic := args[1]; args[0] {
	case "help":
		if slices.Contains(verbs, topic) {
			return nil
		}
		if meant := didyoumean.Closest(topic, verbs); meant != "" {
			return usagef("unknown help topic %q (did you mean %q?); see crux-sim --help", topic, meant)
		}
		return usagef("unknown help topic %q; the commands are %s (see crux-sim --help)", topic, strings.Join(verbs, ", "))
	case "completion":
		shells := []string{"bash", "fish", "powershell", "zsh"}
		if slices.Contains(shells, topic) || topic == "help" {
			return nil
		}
		if meant := didyoumean.Closest(topic, shells); meant != "" {
			return usagef("unknown command %q for \"crux-sim completion\" (did you mean %q?); see crux-sim completion --help", topic, meant)
		}
		return usagef("unknown command %q for \"crux-sim completion\"; the shells are %s (see crux-sim completion --help)", topic, strings.Join(shells, ", "))
	}
	return nil
}

// notWith refuses the flags of names that were given although the mode the
// command runs in (a schedule file, a cassette, a merge) would not use
// them: the user who gave one expects it to count. why says what the mode
// takes instead.
func notWith(fs *pflag.FlagSet, mode, why string, names ...string) error {
	for _, name := range names {
		if f := fs.Lookup(name); f != nil && f.Changed {
			return usagef("--%s does not go with %s: %s", name, mode, why)
		}
	}
	return nil
}

// oneScenario is the argument rule of a verb that takes one scenario
// (optional when some flag can name it instead): none or several is bad
// usage that names the verb and what it takes.
func oneScenario(verb, example string, optional bool) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		switch {
		case len(args) == 0 && !optional:
			return usagef("%s needs a scenario: a built-in name (see crux-sim list) or a file, such as %s", verb, example)
		case len(args) > 1:
			return usagef("%s takes one scenario, not %d arguments; %s each in its own command", verb, len(args), verb)
		}
		return nil
	}
}

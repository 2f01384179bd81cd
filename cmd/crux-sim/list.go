package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/crux-sim/crux-sim/scenarios"
)

func newListCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the built-in scenarios, one per line with a description",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
			for _, b := range scenarios.Builtins() {
				fmt.Fprintf(w, "%s\t%s\n", b.Name, b.Description)
			}
			return w.Flush()
		},
	}
}

func newShowCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "show NAME",
		Short: "Print a built-in scenario's file, to start a scenario of your own from",
		Long: `Print the YAML file of a built-in scenario (see crux-sim list) exactly as
crux-sim runs it. Save it, change it, and run your copy:

  crux-sim show research-coordinator > my-coordinator.yaml
  crux-sim run my-coordinator.yaml`,
		Example: `  crux-sim show cancel-vs-complete
  crux-sim show research-coordinator | crux-sim run -`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("show needs the name of one built-in scenario, such as crux-sim show research-coordinator (crux-sim list names them all)")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			src, ok := scenarios.BuiltinSource(args[0])
			if !ok {
				// Builtin words the error, with its "did you mean".
				_, err := scenarios.Builtin(args[0])
				return usagef("%v; run crux-sim list for the built-ins", err)
			}
			_, err := cmd.OutOrStdout().Write(src)
			return err
		},
	}
}

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

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"ringlab/engine/scenario"
)

func presetCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "preset [NAME]",
		Short: "list the presets, or print one as a scenario file",
		Long: "Without a name, lists the presets with the published result each\n" +
			"reproduces and the kernel it runs on. With one, prints its scenario as JSON:\n" +
			"a starting point for a scenario file of your own (docs/scenario.md).",
		Args:              maxArgs(1, "name"),
		ValidArgsFunction: completePresets(1),
		RunE:              body(runPreset),
	}
}

// completePresets completes the first n arguments with the presets' names.
func completePresets(n int) cobra.CompletionFunc {
	return func(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
		if len(args) >= n {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return scenario.PresetNames(), cobra.ShellCompDirectiveDefault
	}
}

func runPreset(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "NAME\tRESULT\tKERNEL\tDESCRIPTION\n")
		for _, p := range scenario.Presets() {
			seed := p.Seed
			if seed == "" {
				seed = "-"
			}
			sc := p.Build()
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", p.Name, seed, sc.KernelVersion(), p.Description)
		}
		tw.Flush()
		return exitOK
	}
	s, err := scenario.LookupPreset(args[0])
	if err != nil {
		fmt.Fprintf(stderr, "ringlab preset: %v\n", err)
		return exitUsage
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(s); err != nil {
		fmt.Fprintf(stderr, "ringlab preset: %v\n", err)
		return exitFail
	}
	return exitOK
}

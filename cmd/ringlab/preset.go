package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"

	"ringlab/engine/scenario"
)

func runPreset(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("preset", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: ringlab preset [NAME]\n\nWithout a name, lists the presets with the published result each\nreproduces and the kernel it runs on. With one, prints its scenario as JSON:\na starting point for a scenario file of your own (docs/scenario.md).\n")
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	switch fs.NArg() {
	case 0:
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
	case 1:
		s, err := scenario.LookupPreset(fs.Arg(0))
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
	fmt.Fprintln(stderr, "ringlab preset: at most one name")
	return exitUsage
}

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"ringlab/engine/vocab"
)

func numbersCommand() *cobra.Command {
	var o numbersOptions
	c := &cobra.Command{
		Use:   "numbers [--json | --markdown] [NAME ...]",
		Short: "say what a number is: its name, unit, kind and meaning",
		Long: "Prints the name, unit, kind (counter or gauge) and meaning of every number\n" +
			"ringlab shows: in the page, the traces, the tutorials, /ws/metrics and\n" +
			"/metrics. With NAMEs (rx0_kicks, pages.skb), only the entries they match.",
		RunE: func(c *cobra.Command, args []string) error {
			return status(o.run(args, c.OutOrStdout(), c.ErrOrStderr()))
		},
	}
	c.Flags().BoolVar(&o.json, "json", false, "print a JSON array")
	c.Flags().BoolVar(&o.markdown, "markdown", false, "print docs/numbers.md")
	c.MarkFlagsMutuallyExclusive("json", "markdown")
	return c
}

type numbersOptions struct{ json, markdown bool }

// run prints the vocabulary (engine/vocab): every number ringlab shows,
// with its unit, kind and meaning; with names, only theirs.
func (o numbersOptions) run(args []string, stdout, stderr io.Writer) int {
	if o.markdown {
		fmt.Fprint(stdout, vocab.Markdown())
		return exitOK
	}
	descs := vocab.Table()
	if len(args) > 0 {
		descs = descs[:0]
		for _, name := range args {
			d, ok := vocab.Lookup(name)
			if !ok {
				fmt.Fprintf(stderr, "ringlab numbers: %q is not a name ringlab gives a number (ringlab numbers lists them)\n", name)
				return exitUsage
			}
			descs = append(descs, d)
		}
	}
	if o.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(descs); err != nil {
			fmt.Fprintf(stderr, "ringlab numbers: %v\n", err)
			return exitFail
		}
		return exitOK
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "name\tunit\tkind\twhat")
	for _, d := range descs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", d.Name, d.Unit, d.Kind, d.Help)
	}
	tw.Flush()
	return exitOK
}

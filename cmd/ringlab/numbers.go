package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"

	"ringlab/engine/vocab"
)

// runNumbers prints the vocabulary (engine/vocab): every number ringlab
// shows, with its unit, kind and meaning; with names, only theirs.
func runNumbers(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("numbers", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print a JSON array")
	markdown := fs.Bool("markdown", false, "print docs/numbers.md")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: ringlab numbers [--json | --markdown] [NAME ...]\n\nPrints the name, unit, kind (counter or gauge) and meaning of every number\nringlab shows: in the page, the traces, the tutorials, /ws/metrics and\n/metrics. With NAMEs (rx0_kicks, pages.skb), only the entries they match.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if *markdown {
		fmt.Fprint(stdout, vocab.Markdown())
		return exitOK
	}
	descs := vocab.Table()
	if fs.NArg() > 0 {
		descs = descs[:0]
		for _, name := range fs.Args() {
			d, ok := vocab.Lookup(name)
			if !ok {
				fmt.Fprintf(stderr, "ringlab numbers: %q is not a name ringlab gives a number (ringlab numbers lists them)\n", name)
				return exitUsage
			}
			descs = append(descs, d)
		}
	}
	if *asJSON {
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

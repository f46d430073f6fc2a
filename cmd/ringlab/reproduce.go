package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"ringlab/engine"
	"ringlab/engine/scenario"
)

func reproduceCommand() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "reproduce [--json]",
		Short: "reproduce the published results (R1..R4) and compare",
		Long:  reproduceHelp,
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return status(runReproduce(asJSON, c.OutOrStdout(), c.ErrOrStderr()))
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print a JSON array instead of a table")
	return c
}

const reproduceHelp = `Runs every published configuration of docs/published.md (R1..R4) and prints,
per row: the published figure, the simulated one, each configuration's
ratio to its baseline next to the published ratio, what limits the
simulated run (which CPU, which lock, the host, the ring, the wire: the
resource at or above 90% of the window, engine.LimitOf), and a verdict:

  explained       the figure matches, the run is limited by the published
                  mechanism, and at most one value was fitted on the result
  calibrated      the figure matches only through values fitted on the
                  result (more than one, or the mechanism is another)
  not reproduced  the figure does not match (the row gives the model's
                  ratio), or it matches by another mechanism, nothing fitted

Below the table: the values fitted on each result (the cost table's
constants, docs/costs.md, and the presets' "fitted" fields), and why each
row gets its verdict. --json gives the same, with each run's resources.`

func runReproduce(asJSON bool, stdout, stderr io.Writer) int {
	rows, err := engine.Reproduce(func(i, n int, r scenario.Reproduction) {
		fmt.Fprintf(stderr, "ringlab reproduce: [%d/%d] %s %s %s\n", i+1, n, r.ID, r.Config, r.Metric)
	})
	if err != nil {
		fmt.Fprintf(stderr, "ringlab reproduce: %v\n", err)
		return exitFail
	}
	if asJSON {
		out := make([]reproRow, 0, len(rows))
		for _, r := range rows {
			out = append(out, newReproRow(r))
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			fmt.Fprintf(stderr, "ringlab reproduce: %v\n", err)
			return exitFail
		}
		return exitOK
	}
	printReproduction(stdout, rows)
	return exitOK
}

// reproRow is one row of `ringlab reproduce --json`.
type reproRow struct {
	ID             string               `json:"id"`
	Config         string               `json:"config"`
	Baseline       string               `json:"baseline"`
	Unit           string               `json:"unit"`
	Metric         string               `json:"metric"`
	Published      float64              `json:"published"`
	Simulated      float64              `json:"simulated"`
	Ratio          *float64             `json:"ratio"`
	PublishedRatio *float64             `json:"published_ratio"`
	Match          bool                 `json:"match"`
	Limit          engine.Limit         `json:"limit"`
	Mechanism      reproMechanism       `json:"mechanism"`
	Fitted         []engine.FittedValue `json:"fitted"`
	Verdict        engine.Verdict       `json:"verdict"`
	Why            string               `json:"why"`
	Usage          engine.Usage         `json:"usage"`
}

// reproMechanism is the published mechanism of a row and how the run
// compares.
type reproMechanism struct {
	Expected string `json:"expected"`
	Note     string `json:"note"`
	Applies  bool   `json:"applies"`
	Holds    bool   `json:"holds"`
}

func newReproRow(r engine.Row) reproRow {
	fitted := r.Fitted
	if fitted == nil {
		fitted = []engine.FittedValue{}
	}
	return reproRow{
		ID: r.ID, Config: r.Config, Baseline: r.Baseline, Unit: r.Unit, Metric: r.Metric,
		Published: r.Published, Simulated: r.Simulated, Ratio: finite(r.Ratio), PublishedRatio: finite(r.PublishedRatio),
		Match: r.Match, Limit: r.Limit,
		Mechanism: reproMechanism{Expected: r.Check.Expected, Note: r.MechanismNote, Applies: r.Check.Applies, Holds: r.Check.Holds},
		Fitted:    fitted, Verdict: r.Verdict, Why: r.Why, Usage: r.Usage,
	}
}

// printReproduction prints the table, then the values fitted on each
// result, then why each row has its verdict.
func printReproduction(w io.Writer, rows []engine.Row) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "id\tconfig\tmetric\tunit\tpublished\tsimulated\tratio\tpublished ratio\tlimited by\texpected\tfitted\tverdict")
	for _, r := range rows {
		ratio, pr := "", ""
		if r.Baseline != "" {
			ratio, pr = fmtRatio(r.Ratio), fmtRatio(r.PublishedRatio)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\n", r.ID, r.Config, r.Metric, r.Unit,
			fmtFig(r.Published), fmtFig(r.Simulated), ratio, pr, limitCell(r.Limit), r.Mechanism, len(r.Fitted), r.Verdict)
	}
	tw.Flush()
	fmt.Fprintln(w, "\nfitted on each result (docs/costs.md; the presets' \"fitted\"):")
	seen := map[string]bool{}
	for _, r := range rows {
		for _, f := range r.Fitted {
			key := r.ID + " " + f.Name
			if seen[key] {
				continue
			}
			seen[key] = true
			fmt.Fprintf(w, "  %s  %s, on %s\n", r.ID, f.Name, f.Row)
		}
		if len(r.Fitted) == 0 && !seen[r.ID] {
			fmt.Fprintf(w, "  %s  nothing\n", r.ID)
		}
		seen[r.ID] = true
	}
	fmt.Fprintln(w, "\nwhy:")
	for _, r := range rows {
		fmt.Fprintf(w, "  %s %s %s: %s: %s\n", r.ID, r.Config, r.Metric, r.Verdict, r.Why)
	}
}

// limitCell is the table's short form of a limit: the resource and its
// load.
func limitCell(l engine.Limit) string {
	switch l.Kind {
	case engine.ResNone:
		return "nothing saturated"
	case engine.ResRing:
		return fmt.Sprintf("the ring (host waits %.0f%%)", 100*l.Busy)
	case engine.ResWire:
		return "the wire"
	}
	return strings.TrimSpace(fmt.Sprintf("%s %.0f%%", l.Name, 100*l.Busy))
}

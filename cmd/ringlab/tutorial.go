package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"ringlab/server/hostsrc"
	"ringlab/tutorials"
)

func tutorialCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "tutorial",
		Short: "list, run and check the walkthroughs in tutorials/",
		Long: `NAME is a tutorial's name, number or file name (see list); FILE is a path to a
tutorial file being written (anything ending in .md). The format is described
in tutorials/README.md.`,
		RunE: parentRun,
	}
	var listJSON, runJSON, noProse, verbose bool
	list := &cobra.Command{
		Use:   "list [--json]",
		Short: "the tutorials: number, name, level, duration, steps, checks",
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return status(tutorialList(listJSON, c.OutOrStdout(), c.ErrOrStderr()))
		},
	}
	list.Flags().BoolVar(&listJSON, "json", false, "print a JSON array")
	run := &cobra.Command{
		Use:               "run [--json] [--no-prose] NAME",
		Short:             "run one tutorial headless: each step's prose, the engine's figures and every check with its operands",
		ValidArgsFunction: completeTutorials(1),
		RunE: func(c *cobra.Command, args []string) error {
			return status(tutorialRun(args, runJSON, noProse, c.OutOrStdout(), c.ErrOrStderr()))
		},
	}
	run.Flags().BoolVar(&runJSON, "json", false, "print the report as JSON")
	run.Flags().BoolVar(&noProse, "no-prose", false, "print the directives and figures without the prose")
	check := &cobra.Command{
		Use:               "check [-v] [NAME|FILE ...]",
		Short:             "run every step of every tutorial (or those named) and fail on any check that does not hold or any file that does not parse",
		ValidArgsFunction: completeTutorials(-1),
		RunE: func(c *cobra.Command, args []string) error {
			return status(tutorialCheck(args, verbose, c.OutOrStdout(), c.ErrOrStderr()))
		},
	}
	check.Flags().BoolVarP(&verbose, "verbose", "v", false, "print every step's transcript")
	export := &cobra.Command{
		Use:               "export NAME",
		Short:             "the parsed tutorial as JSON (the browser's form)",
		ValidArgsFunction: completeTutorials(1),
		RunE:              body(tutorialExport),
	}
	c.AddCommand(list, run, check, export)
	return c
}

// completeTutorials completes the first n arguments (all when n < 0)
// with the tutorials' names, and files.
func completeTutorials(n int) cobra.CompletionFunc {
	return func(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
		if n >= 0 && len(args) >= n {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		all, _ := tutorials.All()
		names := make([]string, 0, len(all))
		for _, t := range all {
			names = append(names, t.Name+"\t"+t.Title)
		}
		return names, cobra.ShellCompDirectiveDefault
	}
}

// loadTutorial finds an embedded tutorial by name, or reads a file when
// arg names one (or looks like a path to one: a missing file is an
// error, not a tutorial's name).
func loadTutorial(arg string) (*tutorials.Tutorial, error) {
	if fileExists(arg) || strings.HasSuffix(arg, ".md") || strings.ContainsRune(arg, filepath.Separator) {
		return loadTutorialFile(arg)
	}
	return tutorials.Find(arg)
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

func loadTutorialFile(path string) (*tutorials.Tutorial, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// A lesson's limit and checks (tutorials.ParseLesson), as the page
	// loads it: what passes here loads there.
	data, err := io.ReadAll(io.LimitReader(f, tutorials.MaxLessonBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > tutorials.MaxLessonBytes {
		return nil, fmt.Errorf("%s:1: larger than %d bytes (%d KiB): a tutorial has at most that", path, tutorials.MaxLessonBytes, tutorials.MaxLessonBytes>>10)
	}
	t, err := tutorials.ParseLesson(path, data)
	if err != nil {
		return nil, err
	}
	if err := tutorials.CheckNames(t); err != nil {
		return nil, err // as the page refuses it
	}
	base := strings.TrimSuffix(filepath.Base(path), ".md")
	t.Name = base
	if len(base) > 3 && base[2] == '-' && base[0] >= '0' && base[0] <= '9' && base[1] >= '0' && base[1] <= '9' {
		t.Number = int(base[0]-'0')*10 + int(base[1]-'0')
		t.Name = base[3:]
	}
	return t, nil
}

// tutorialOptions are the options every headless run uses: measurements
// shared between tutorials, and the host read through server/hostsrc.
func tutorialOptions() tutorials.Options {
	return tutorials.Options{Host: readHost, Cache: tutorials.NewCache()}
}

// readHost reads a real interface's counters for the host directive,
// named as everywhere else (hostsrc.Sample.Figures: sysfs statistics,
// per-queue ethtool counters as rx0_kicks, ethtool.NAME, page_pools,
// page_pool.*, softnet.*). It only reads.
func readHost(iface string) (map[string]float64, error) {
	src, err := hostsrc.Open(iface)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	smp, err := src.Read()
	if err != nil {
		return nil, err
	}
	return smp.Figures(), nil
}

// countChecks counts a tutorial's check and answer directives.
func countChecks(t *tutorials.Tutorial) int {
	n := 0
	for _, st := range t.Steps {
		for _, d := range st.Directives {
			if d.Op == tutorials.OpCheck || d.Op == tutorials.OpAnswer {
				n++
			}
		}
	}
	return n
}

func tutorialList(asJSON bool, stdout, stderr io.Writer) int {
	all, err := tutorials.All()
	if err != nil {
		fmt.Fprintf(stderr, "ringlab tutorial list: %v\n", err)
		if len(all) == 0 {
			return exitFail
		}
	}
	if asJSON {
		type entry struct {
			Number     int      `json:"number"`
			Name       string   `json:"name"`
			Title      string   `json:"title"`
			Level      string   `json:"level"`
			Minutes    int      `json:"minutes"`
			Steps      int      `json:"steps"`
			Checks     int      `json:"checks"`
			Learn      []string `json:"learn"`
			Reproduces []string `json:"reproduces,omitempty"`
		}
		out := []entry{}
		for _, t := range all {
			out = append(out, entry{t.Number, t.Name, t.Title, t.Level, t.Minutes, len(t.Steps), countChecks(t), t.Learn, t.Reproduces})
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return exitFail
		}
	} else {
		tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "#\tname\tlevel\tduration\tsteps\tchecks\ttitle")
		for _, t := range all {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%d\t%s\n", t.Number, t.Name, t.Level, t.Duration, len(t.Steps), countChecks(t), t.Title)
		}
		tw.Flush()
	}
	if err != nil {
		return exitFail
	}
	return exitOK
}

func tutorialRun(args []string, asJSON, noProse bool, stdout, stderr io.Writer) int {
	if len(args) != 1 {
		fmt.Fprintln(stderr, "ringlab tutorial run: want one tutorial name or file")
		return exitUsage
	}
	t, err := loadTutorial(args[0])
	if err != nil {
		fmt.Fprintf(stderr, "ringlab tutorial run: %v\n", err)
		return exitFail
	}
	opts := tutorialOptions()
	if asJSON {
		r := tutorials.Run(t, opts)
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r); err != nil {
			return exitFail
		}
		if r.Failed > 0 {
			return exitFail
		}
		return exitOK
	}
	tutorials.WriteHeader(stdout, t)
	if !noProse {
		tutorials.WriteIntro(stdout, t)
	}
	r := &tutorials.Report{Tutorial: t.Name, File: t.File}
	s := tutorials.NewSession(t, opts)
	for !s.Done() {
		i := s.Next()
		st := s.RunStep()
		tutorials.WriteStep(stdout, &t.Steps[i], &st, !noProse)
		r.Steps = append(r.Steps, st)
		r.Checks += st.Checks
		r.Failed += st.Failed
		r.Skipped += st.Skipped
	}
	fmt.Fprintf(stdout, "\n%s\n", r.Summary())
	if r.Failed > 0 {
		for _, f := range r.Failures() {
			fmt.Fprintln(stderr, f)
		}
		return exitFail
	}
	return exitOK
}

func tutorialCheck(args []string, verbose bool, stdout, stderr io.Writer) int {
	start := time.Now()
	var list []*tutorials.Tutorial
	badFiles := 0
	if len(args) == 0 {
		all, err := tutorials.All()
		if err != nil {
			fmt.Fprintln(stderr, err)
			badFiles += countErrors(err)
		}
		list = all
		if len(all) == 0 && err == nil {
			fmt.Fprintln(stderr, "ringlab tutorial check: no tutorials are embedded")
			return exitFail
		}
	} else {
		for _, a := range args {
			t, err := loadTutorial(a)
			if err != nil {
				fmt.Fprintln(stderr, err)
				badFiles++
				continue
			}
			list = append(list, t)
		}
	}
	opts := tutorialOptions()
	checks, failed, skipped := 0, 0, 0
	for _, t := range list {
		r := tutorials.Run(t, opts)
		if verbose {
			tutorials.WriteHeader(stdout, t)
			for i := range r.Steps {
				tutorials.WriteStep(stdout, &t.Steps[i], &r.Steps[i], false)
			}
			fmt.Fprintln(stdout)
		}
		checks += r.Checks
		failed += r.Failed
		skipped += r.Skipped
		fmt.Fprintln(stdout, r.Summary())
		for _, f := range r.Failures() {
			fmt.Fprintln(stderr, f)
		}
	}
	summary := fmt.Sprintf("%d tutorials, %d checks, %d failed", len(list), checks, failed)
	if skipped > 0 {
		summary += fmt.Sprintf(", %d skipped", skipped)
	}
	if badFiles > 0 {
		summary += fmt.Sprintf(", %d files that do not parse", badFiles)
	}
	fmt.Fprintf(stdout, "%s, in %s\n", summary, time.Since(start).Round(time.Millisecond))
	if failed > 0 || badFiles > 0 {
		return exitFail
	}
	return exitOK
}

// countErrors counts the files in a joined error from tutorials.All.
func countErrors(err error) int {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return len(j.Unwrap())
	}
	return 1
}

func tutorialExport(args []string, stdout, stderr io.Writer) int {
	if len(args) != 1 {
		fmt.Fprintln(stderr, "ringlab tutorial export: want one tutorial name or file")
		return exitUsage
	}
	t, err := loadTutorial(args[0])
	if err != nil {
		fmt.Fprintf(stderr, "ringlab tutorial export: %v\n", err)
		return exitFail
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(t); err != nil {
		fmt.Fprintf(stderr, "ringlab tutorial export: %v\n", err)
		return exitFail
	}
	return exitOK
}

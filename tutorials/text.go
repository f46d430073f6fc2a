package tutorials

import (
	"fmt"
	"io"
	"strings"
)

// WriteHeader prints a tutorial's title block.
func WriteHeader(w io.Writer, t *Tutorial) {
	fmt.Fprintf(w, "Tutorial %d: %s\n", t.Number, t.Title)
	fmt.Fprintf(w, "%s, %s, %d steps (%s)\n", t.Level, t.Duration, len(t.Steps), t.File)
	if len(t.Reproduces) > 0 {
		fmt.Fprintf(w, "reproduces: %s\n", strings.Join(t.Reproduces, ", "))
	}
	fmt.Fprintln(w, "You will learn:")
	for _, l := range t.Learn {
		fmt.Fprintf(w, "  - %s\n", l)
	}
}

// WriteIntro prints the prose before the first step.
func WriteIntro(w io.Writer, t *Tutorial) {
	if t.Intro != "" {
		fmt.Fprintf(w, "\n%s\n", t.Intro)
	}
}

// WriteStep prints what a step did: its prose (when prose is set) in
// reading order around the blocks, each directive, the figures it printed
// and each condition with its operands.
func WriteStep(w io.Writer, st *Step, r *StepResult, prose bool) {
	fmt.Fprintf(w, "\n== Step %d: %s\n", st.Number, st.Title)
	done := make([]bool, len(r.Items))
	for _, seg := range st.Segments {
		if seg.Prose != "" {
			if prose {
				fmt.Fprintf(w, "\n%s\n\n", seg.Prose)
			}
			continue
		}
		for _, i := range seg.Directives {
			if i < len(r.Items) {
				writeItem(w, &r.Items[i])
				done[i] = true
			}
		}
	}
	for i := range r.Items {
		if !done[i] {
			writeItem(w, &r.Items[i])
		}
	}
}

func writeItem(w io.Writer, it *Item) {
	switch it.Op {
	case OpQuestion:
		fmt.Fprintf(w, "  ? %s\n", it.Question)
		fmt.Fprintf(w, "    (predict %s, then read the answer below)\n", it.Asks)
		return
	case OpCheck, OpAnswer:
		tag := strings.ToUpper(string(it.Status))
		if it.Status == StatusOK {
			tag = "ok"
		}
		line := fmt.Sprintf("  %-5s %s", tag, it.Text)
		if it.Detail != "" {
			line += "   [" + it.Detail + "]"
		}
		fmt.Fprintln(w, line)
		if it.Error != "" {
			fmt.Fprintf(w, "        %s\n", it.Error)
		}
		return
	}
	fmt.Fprintf(w, "  > %s\n", it.Text)
	for _, o := range it.Output {
		fmt.Fprintf(w, "      %s\n", o)
	}
	if it.Error != "" {
		fmt.Fprintf(w, "      %s: %s\n", strings.ToUpper(string(it.Status)), it.Error)
	}
}

// Summary is one line: checks passed, failed and skipped.
func (r *Report) Summary() string {
	steps := len(r.Steps)
	s := fmt.Sprintf("%s: %d steps, %d checks, %d failed", r.File, steps, r.Checks, r.Failed)
	if r.Skipped > 0 {
		s += fmt.Sprintf(", %d skipped", r.Skipped)
	}
	return s
}

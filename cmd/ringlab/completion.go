package main

import (
	"bytes"
	"fmt"
	"strings"
	"time"

	"github.com/cpuguy83/go-md2man/v2/md2man"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// completionCmd is `ringlab completion bash|zsh|fish`: the shell's
// completion script, from the command tree. The scripts ask the binary
// (`ringlab __complete ...`) what comes next, so they complete presets,
// tutorials, lab programs and source kinds as well as commands and
// flags.
func completionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "completion bash|zsh|fish",
		Short: "print the shell completion script for bash, zsh or fish",
		Long: `Prints a completion script for the shell named. To load it:

  bash  source <(ringlab completion bash)
        (or save it as /usr/share/bash-completion/completions/ringlab)
  zsh   ringlab completion zsh > "${fpath[1]}/_ringlab"
        (compinit must be enabled; start a new shell)
  fish  ringlab completion fish > ~/.config/fish/completions/ringlab.fish`,
		ValidArgs: []string{"bash", "zsh", "fish"},
		Args: func(c *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError{c, fmt.Errorf("want one shell: bash, zsh or fish")}
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			root, w := c.Root(), c.OutOrStdout()
			switch args[0] {
			case "bash":
				return root.GenBashCompletionV2(w, true)
			case "zsh":
				return root.GenZshCompletion(w)
			case "fish":
				return root.GenFishCompletion(w, true)
			}
			return usageError{c, fmt.Errorf("%q: want bash, zsh or fish", args[0])}
		},
	}
}

// manCmd is `ringlab man`: ringlab(1), every command and flag on one
// page, from the command tree.
func manCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "man",
		Short: "print the manual page, ringlab(1), in roff (ringlab man | man -l -)",
		Long: `Prints ringlab(1) in roff: every command with its usage, description and
flags, from the same definitions as the help and the completion. Read it
with ringlab man | man -l -, or install it as ringlab.1 in a man1
directory (make man writes bin/ringlab.1).`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			_, err := c.OutOrStdout().Write(manPage(c.Root()))
			return err
		},
	}
}

// manPage renders root's tree as a man page: markdown written here,
// turned into roff by md2man (which escapes what roff would read as
// requests).
func manPage(root *cobra.Command) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%% RINGLAB 1 %q %q %q\n\n", manDate(), version, "ringlab manual")
	fmt.Fprintf(&b, "# NAME\n\nringlab - %s\n\n", root.Short)
	fmt.Fprintf(&b, "# SYNOPSIS\n\n**ringlab** *COMMAND* [*flags*] [*arguments*]\n\n")
	fmt.Fprintf(&b, "# DESCRIPTION\n\n%s\n\n", root.Long)
	b.WriteString("Flags may come before or after the arguments; long flags take two dashes " +
		"(**--packets 1000** or **--packets=1000**). Help goes to stdout: **ringlab help** *COMMAND*, " +
		"or **--help** after any command.\n\n")
	b.WriteString("# COMMANDS\n\n")
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, s := range available(c) {
			fmt.Fprintf(&b, "### %s\n\n", s.CommandPath()) // .SS
			fmt.Fprintf(&b, "```\n%s\n```\n\n", strings.Join(usageLines(s), "\n"))
			text := s.Long
			if text == "" {
				text = s.Short + "."
			}
			fmt.Fprintf(&b, "```\n%s\n```\n\n", strings.TrimRight(text, "\n"))
			s.LocalFlags().VisitAll(func(f *pflag.Flag) {
				if f.Hidden || f.Name == "help" {
					return
				}
				name, usage := pflag.UnquoteUsage(f)
				b.WriteString("**")
				if f.Shorthand != "" {
					fmt.Fprintf(&b, "-%s**, **", f.Shorthand)
				}
				fmt.Fprintf(&b, "--%s**", f.Name)
				if name != "" {
					fmt.Fprintf(&b, " *%s*", name)
				}
				fmt.Fprintf(&b, "\n: %s", mdEscape(usage))
				if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" && f.DefValue != "0s" && f.DefValue != "[]" {
					fmt.Fprintf(&b, " (default %s)", mdEscape(f.DefValue))
				}
				b.WriteString("\n\n")
			})
			walk(s)
		}
	}
	walk(root)
	b.WriteString("# EXIT STATUS\n\n0 on success, 1 when the command ran and failed, 2 for bad arguments or bad input.\n\n")
	b.WriteString("# SEE ALSO\n\nREADME.md and docs/ in the source; **ringlab help** *COMMAND*.\n")
	return md2man.Render(b.Bytes())
}

// mdEscape keeps markdown from reading a flag's text as emphasis or code.
func mdEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, "*", `\*`, "_", `\_`, "`", "\\`", "<", `\<`).Replace(s)
}

// manDate is the page's date: the build's, so the page is the same for
// the same binary.
var manDate = func() string { return buildTime().Format("January 2006") }

// buildTime is the commit time the binary was built from, or the Unix
// epoch when unknown (go run, go test).
func buildTime() time.Time {
	if t, ok := vcsSetting("vcs.time"); ok {
		if at, err := time.Parse(time.RFC3339, t); err == nil {
			return at
		}
	}
	return time.Unix(0, 0).UTC()
}

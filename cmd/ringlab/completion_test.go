package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/engine/scenario"
	"ringlab/internal/testenv"
)

// asRinglabEnv, set to 1 in a child's environment, makes this test binary
// run as ringlab: the completion scripts call `ringlab __complete`, and
// lab run's output is piped into a reader that stops.
const asRinglabEnv = "RINGLAB_TEST_AS_RINGLAB"

func TestMain(m *testing.M) {
	if os.Getenv(asRinglabEnv) == "1" {
		main()
	}
	os.Exit(m.Run())
}

// ringlabOnPath writes an executable ringlab into a new directory that runs
// this test binary as ringlab, and returns the directory.
func ringlabOnPath(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	dir := t.TempDir()
	script := "#!/bin/sh\n" + asRinglabEnv + "=1 exec '" + exe + "' \"$@\"\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "ringlab"), []byte(script), 0o755))
	return dir
}

// subcommands are the commands a user may run, as `lab run`, from the
// tree help and completion are made of.
func subcommands(t *testing.T) []string {
	var out []string
	root := newRoot(nil, nil)
	for _, c := range available(root) {
		out = append(out, c.Name())
		for _, s := range available(c) {
			out = append(out, c.Name()+" "+s.Name())
		}
	}
	require.Contains(t, out, "run")
	require.Contains(t, out, "lab run")
	return out
}

// TestCompletionProtocol: what both shells' scripts ask the binary
// (`ringlab __complete WORDS...`) names every command, every subcommand
// and a command's flags, and completes presets and lab programs.
func TestCompletionProtocol(t *testing.T) {
	complete := func(words ...string) string {
		var out bytes.Buffer
		require.Equal(t, exitOK, dispatch(append([]string{"__complete"}, words...), &out, &bytes.Buffer{}), words)
		return "\n" + out.String() // each offer starts a line
	}
	top := complete("")
	for _, name := range subcommands(t) {
		parent, sub, nested := strings.Cut(name, " ")
		if !nested {
			assert.Contains(t, top, "\n"+name+"\t", "ringlab <TAB> offers %s", name)
			continue
		}
		assert.Contains(t, complete(parent, ""), "\n"+sub+"\t", "ringlab %s <TAB> offers %s", parent, sub)
	}
	assert.Contains(t, complete("run", "--pa"), "\n--packets\t")
	assert.Contains(t, complete("run", "xdp-drop", "--"), "\n--interval\t", "flags after the argument")
	for _, p := range scenario.PresetNames() {
		assert.Contains(t, complete("run", ""), "\n"+p+"\n")
	}
	assert.Contains(t, complete("lab", "run", ""), "\nxdp_drop\n")
	assert.Contains(t, complete("serve", "--source", ""), "\nhost\n")
	assert.Contains(t, complete("help", ""), "\ntutorial\t")
}

// TestBashCompletion loads `ringlab completion bash` in bash and
// completes as a user pressing Tab would, with ringlab on PATH.
func TestBashCompletion(t *testing.T) {
	// Each completion starts this test binary, which takes about a second
	// under the detector.
	testenv.SkipUnderRace(t, "each completion starts this test binary")
	t.Parallel()
	bash, err := exec.LookPath("bash")
	if err != nil {
		testenv.Missing(t, "bash is not installed")
	}
	// The scripts use bash-completion's helpers, as a shell set up for
	// completion has them.
	const helpers = "/usr/share/bash-completion/bash_completion"
	if _, err := os.Stat(helpers); err != nil {
		testenv.Missing(t, "bash-completion is not installed (Debian's bash-completion package: apt-get install -y bash-completion)")
	}
	code, script, errs := runCLI("completion", "bash")
	require.Equal(t, exitOK, code, errs)
	file := filepath.Join(t.TempDir(), "ringlab.bash")
	require.NoError(t, os.WriteFile(file, []byte(script), 0o644))
	path := ringlabOnPath(t)
	tab := func(line string) []string {
		words := strings.Fields(line)
		if strings.HasSuffix(line, " ") {
			words = append(words, "")
		}
		prog := `source ` + helpers + `; source "$1"; shift
COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
__start_ringlab ringlab "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}" 2>/dev/null
printf '%s\n' "${COMPREPLY[@]}"`
		cmd := exec.Command(bash, append([]string{"--norc", "-c", prog, "bash", file}, words...)...)
		cmd.Env = append(os.Environ(), "PATH="+path+string(os.PathListSeparator)+os.Getenv("PATH"))
		out, err := cmd.Output()
		require.NoError(t, err, line)
		return strings.Fields(string(out))
	}
	top := tab("ringlab ")
	for _, name := range subcommands(t) {
		parent, sub, nested := strings.Cut(name, " ")
		if !nested {
			assert.Contains(t, top, name, "ringlab <TAB>")
			continue
		}
		assert.Contains(t, tab("ringlab "+parent+" "), sub, "ringlab %s <TAB>", parent)
	}
	assert.Equal(t, []string{"--packets"}, tab("ringlab run xdp-drop --pac"))
	assert.Contains(t, tab("ringlab run xdp"), "xdp-drop")
	assert.Equal(t, []string{"reproduce"}, tab("ringlab repr"))
}

// TestZshCompletion: `ringlab completion zsh` is a zsh completion
// function for ringlab that zsh parses, asking the binary as bash's does.
func TestZshCompletion(t *testing.T) {
	code, script, errs := runCLI("completion", "zsh")
	require.Equal(t, exitOK, code, errs)
	assert.True(t, strings.HasPrefix(script, "#compdef ringlab"), "a completion function for ringlab")
	assert.Contains(t, script, "__complete", "it asks the binary (TestCompletionProtocol)")
	zsh, err := exec.LookPath("zsh")
	if err != nil {
		testenv.Missing(t, "zsh is not installed (Debian's zsh package: apt-get install -y zsh)")
	}
	file := filepath.Join(t.TempDir(), "_ringlab")
	require.NoError(t, os.WriteFile(file, []byte(script), 0o644))
	out, err := exec.Command(zsh, "-n", file).CombinedOutput()
	assert.NoError(t, err, "zsh -n: %s", out)

	code, fish, errs := runCLI("completion", "fish")
	require.Equal(t, exitOK, code, errs)
	assert.Contains(t, fish, "complete -c ringlab", "fish's completion too")

	code, _, errs = runCLI("completion", "tcsh")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errs, `"tcsh": want bash, zsh or fish`)
}

// TestManPage: `ringlab man` is a roff page that names every command and
// every flag, from the same tree as the help.
func TestManPage(t *testing.T) {
	code, page, errs := runCLI("man")
	require.Equal(t, exitOK, code, errs)
	require.Regexp(t, `(?m)^\.TH RINGLAB 1 `, page)
	if home, err := os.UserHomeDir(); err == nil && len(home) > 1 {
		assert.NotContains(t, page, home+"/", "the page is the same on every machine (--state-dir's default)")
	}
	for _, name := range subcommands(t) {
		assert.Contains(t, page, "\n.SS ringlab "+name+"\n", "the page has a section for ringlab %s", name)
	}
	root := newRoot(nil, nil)
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if f.Name != "help" {
				assert.Contains(t, page, `\fB--`+f.Name+`\fP`, "%s's --%s", c.CommandPath(), f.Name)
			}
		})
		for _, s := range available(c) {
			walk(s)
		}
	}
	for _, c := range available(root) {
		walk(c)
	}
	if man, err := exec.LookPath("man"); err == nil {
		cmd := exec.Command(man, "-l", "-")
		cmd.Stdin = strings.NewReader(page)
		cmd.Env = append(os.Environ(), "MANPAGER=cat", "PAGER=cat", "MANWIDTH=100")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "man -l -: %s", out)
		assert.Contains(t, string(out), "ringlab run")
	}
}

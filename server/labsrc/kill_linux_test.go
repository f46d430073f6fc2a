//go:build linux

package labsrc

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/internal/testenv"
)

// childEnv makes the test binary a lab that prints its namespaces and waits
// to be killed (see TestMain).
const childEnv = "RINGLAB_LABSRC_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		runChild()
		return
	}
	os.Exit(m.Run())
}

// runChild opens a sending lab, prints "ready NS_A NS_B" and blocks until
// it is killed.
func runChild() {
	c := DefaultConfig()
	c.Rate = 1000
	l, err := New(c)
	if err != nil {
		fmt.Printf("error %v\n", err)
		os.Exit(1)
	}
	n := l.Namespaces()
	fmt.Printf("ready %s %s\n", n[0], n[1])
	select {}
}

// startChild starts a lab in another process and returns it with its
// namespace names.
func startChild(t *testing.T) (*exec.Cmd, []string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=1")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(out).ReadString('\n')
		line <- s
	}()
	select {
	case s := <-line:
		f := strings.Fields(s)
		require.True(t, len(f) == 3 && f[0] == "ready", "child said %q", s)
		return cmd, f[1:]
	case <-time.After(30 * time.Second):
		t.Fatal("the child lab did not come up")
	}
	return nil, nil
}

func TestLabLeftoversOfAKilledProcessAreRemoved(t *testing.T) {
	testenv.RequireRoot(t)
	cmd, names := startChild(t)
	left, err := Namespaces()
	require.NoError(t, err)
	require.Subset(t, left, names)

	// A live lab's namespaces are not leftovers: two servers coexist.
	removed, err := CleanLeftovers()
	require.NoError(t, err)
	assert.NotContains(t, removed, names[0])
	left, err = Namespaces()
	require.NoError(t, err)
	require.Subset(t, left, names, "a live process's lab is left alone")

	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
	left, err = Namespaces()
	require.NoError(t, err)
	require.Subset(t, left, names, "SIGKILL leaves the namespaces behind")

	// Starting again removes them.
	l := openLab(t, "xdp_pass,count=10")
	assertGone(t, names...)
	assert.Contains(t, strings.Join(l.Info().Notes, "\n"), names[0], "the new lab says what it removed")
}

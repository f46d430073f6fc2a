package play

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// wordingTest finds a line of the page's JavaScript that tests the words
// of a message (an error's message, a note's text, a close's reason)
// with a regular expression or a string search: the page acts on a
// message's code (proto's), and the controller's words may change.
var (
	wordingCall    = regexp.MustCompile(`\.(test|exec|match|matchAll|search|includes|startsWith|endsWith|indexOf)\(`)
	wordingOperand = regexp.MustCompile(`\.(message|text|reason|error|say|detail|Message)\b`)
)

func testsWording(line string) bool {
	if strings.HasPrefix(strings.TrimSpace(line), "//") {
		return false
	}
	return wordingCall.MatchString(line) && wordingOperand.MatchString(line)
}

// TestPageMatchesCodesNotWords: no file of web/ decides what to do from
// a message's wording; errors and notes carry a code for that.
func TestPageMatchesCodesNotWords(t *testing.T) {
	// What the check catches (the page once did each).
	for _, bad := range []string{
		`if (/expired|full|removed/.test(e.reason || "")) {`,
		`const following = /following the room/.test(m.text);`,
		`if (/following the room/.test(m.message || "")) {`,
		`if (m.message.includes("detach")) {`,
	} {
		assert.True(t, testsWording(bad), bad)
	}
	for _, ok := range []string{
		`if (m.code === "following") offerDetach(m.message);`,
		`return h === "localhost" || /^127\./.test(h);`,
		`// a comment may say /following/.test(m.text)`,
	} {
		assert.False(t, testsWording(ok), ok)
	}

	files, err := filepath.Glob("../web/*.js")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		for i, line := range strings.Split(string(b), "\n") {
			assert.False(t, testsWording(line), "%s:%d tests a message's words; match its code: %s", f, i+1, strings.TrimSpace(line))
		}
	}
}

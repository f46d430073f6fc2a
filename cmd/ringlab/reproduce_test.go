package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReproduceJSON(t *testing.T) {
	skipUnderRace(t)
	t.Parallel()
	code, out, errs := runCLI("reproduce", "--json")
	require.Equal(t, exitOK, code, errs)
	var rows []struct {
		ID        string   `json:"id"`
		Config    string   `json:"config"`
		Baseline  string   `json:"baseline"`
		Unit      string   `json:"unit"`
		Published float64  `json:"published"`
		Simulated float64  `json:"simulated"`
		Ratio     *float64 `json:"ratio"`
		Match     bool     `json:"match"`
		Limit     struct {
			Kind, Name, Why string
		} `json:"limit"`
		Mechanism struct {
			Expected, Note string
			Applies, Holds bool
		} `json:"mechanism"`
		Fitted  []struct{ Name, Row, Why string } `json:"fitted"`
		Verdict string                            `json:"verdict"`
		Why     string                            `json:"why"`
		Usage   struct {
			CPUs []struct {
				Name string
				Busy float64
			} `json:"cpus"`
			Hosts []struct{ Busy, Wait float64 } `json:"hosts"`
		} `json:"usage"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rows))
	ids := map[string]int{}
	for _, r := range rows {
		ids[r.ID]++
		if r.Baseline == "" {
			assert.Nil(t, r.Ratio, "%s is a baseline", r.Config)
		}
		assert.Contains(t, []string{"explained", "calibrated", "not reproduced"}, r.Verdict, r.Config)
		assert.NotEmpty(t, r.Why, r.Config)
		assert.NotEmpty(t, r.Limit.Name, r.Config)
		assert.NotEmpty(t, r.Mechanism.Expected, r.Config)
		assert.NotEmpty(t, r.Usage.CPUs, r.Config)
		assert.NotEmpty(t, r.Usage.Hosts, r.Config)
		assert.NotNil(t, r.Fitted, r.Config)
		if r.Config == "r1-upstream" {
			assert.Equal(t, "not reproduced", r.Verdict)
			assert.Empty(t, r.Fitted)
			assert.Equal(t, "cpu1", r.Limit.Name)
		}
		if r.Config == "r4-page-alloc-2flows" {
			assert.Len(t, r.Fitted, 1)
		}
	}
	for _, id := range []string{"R1", "R2", "R3", "R4"} {
		assert.Positive(t, ids[id], id)
	}
	assert.Contains(t, errs, "[1/", "progress goes to stderr")
}

// TestReproduceTable: the table has the limit, the published mechanism,
// the count of fitted values and the verdict per row, then what was
// fitted on each result and why each row has its verdict.
func TestReproduceTable(t *testing.T) {
	skipUnderRace(t)
	t.Parallel()
	code, out, errs := runCLI("reproduce")
	require.Equal(t, exitOK, code, errs)
	lines := strings.Split(out, "\n")
	assert.Regexp(t, `^id +config +metric +unit +published +simulated +ratio +published ratio +limited by +expected +fitted +verdict$`, lines[0])
	assert.Regexp(t, `(?m)^R2 +r2-mtu9000-before .* +ring +0 +not reproduced$`, out)
	assert.Regexp(t, `(?m)^R4 +r4-page-alloc-2flows .*zone->lock \d+% +lock:zone->lock +1 +explained$`, out)
	assert.Contains(t, out, "  R1  nothing\n")
	assert.Contains(t, out, "  R4  buddy_per_page, on r4-page-alloc-2flows\n")
	assert.Contains(t, out, "  R3  nothing\n")
	assert.Contains(t, out, "R2 r2-mtu9000-before goodput_gbps: not reproduced: ")

	code, help, _ := runCLI("help", "reproduce")
	assert.Equal(t, exitOK, code)
	for _, v := range []string{"explained", "calibrated", "not reproduced"} {
		assert.Contains(t, help, v, "ringlab help reproduce defines the verdicts")
	}
}

//go:build !linux

package bench

import (
	"errors"
	"time"
)

var errNoProc = errors.New("needs Linux (/proc and getrusage)")

func procCPU(int) (time.Duration, error) { return 0, errNoProc }

func procMemory(int) (peak, now float64, err error) { return 0, 0, errNoProc }

func selfCPU() (time.Duration, error) { return 0, errNoProc }

func machineCPU() (busy, total time.Duration, err error) { return 0, 0, errNoProc }

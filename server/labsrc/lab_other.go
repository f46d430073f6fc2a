//go:build !linux

package labsrc

import (
	"errors"

	"ringlab/server/metrics"
)

// ErrNotLinux is returned by New on other operating systems.
var ErrNotLinux = errors.New("lab: network namespaces, veth and XDP need Linux")

// Lab cannot be built on this operating system.
type Lab struct{}

// New fails with ErrNotLinux.
func New(Config) (*Lab, error) { return nil, ErrNotLinux }

// Info implements metrics.Source.
func (*Lab) Info() metrics.SourceInfo {
	return metrics.SourceInfo{Name: "lab", Labels: metrics.Labels{Kind: "lab"}}
}

// Sample implements metrics.Source.
func (*Lab) Sample() (metrics.Sample, error) { return metrics.Sample{}, ErrNotLinux }

// Close implements metrics.Source.
func (*Lab) Close() error { return nil }

// Namespaces returns nothing: there are no lab namespaces here.
func Namespaces() ([]string, error) { return nil, nil }

// CleanLeftovers fails with ErrNotLinux.
func CleanLeftovers() ([]string, error) { return nil, ErrNotLinux }

// Config returns the zero Config.
func (*Lab) Config() Config { return Config{} }

// Namespaces returns no names.
func (*Lab) Namespaces() [2]string { return [2]string{} }

// SenderDone returns a closed channel.
func (*Lab) SenderDone() <-chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}

// SenderRate returns 0.
func (*Lab) SenderRate() float64 { return 0 }
